#!/usr/bin/env bash
# Where the CPU of the sustained phase goes, per task, for builds of `punctual serve`
# alternated ROUNDS times under one bench binary: `bench throughput` over HTTP, and
# during seconds 1-9 of its sustained schedule + fire + ack the CPU of the server, of
# its redis-server (STORE=redis: a fresh one per run, no persistence) and of the bench,
# as µs per task completed. One line per run.
#
#   bench/serve_cpu.sh ROUNDS BENCH_BIN BIN [BIN...]
set -euo pipefail
rounds=$1 bench=$2
shift 2
. "$(dirname "$0")/serve_run.sh"
cpu_of() { local total=0; for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done; echo "$total"; }
# The bench and the punctual-bench it runs beside it.
bench_pids() { echo "$bench_pid" $(pgrep -P "$bench_pid" || true); }
for round in $(seq "$rounds"); do
  for bin in "$@"; do
    start_serve "$bin"
    "$bench" bench throughput --server "http://127.0.0.1:$port" --baselines=false --duration 10s --json \
      >"$dir/bench.json" 2>/dev/null &
    bench_pid=$!
    sleep 1
    serve0=$(cpu_of "$pid") bench0=$(cpu_of $(bench_pids)) redis0=0
    [ -n "$redis_pid" ] && redis0=$(cpu_of "$redis_pid")
    sleep 8
    serve1=$(cpu_of "$pid") bench1=$(cpu_of $(bench_pids)) redis1=0
    [ -n "$redis_pid" ] && redis1=$(cpu_of "$redis_pid")
    wait "$bench_pid"
    python3 - "$store" "$round" "$bin" "$dir/bench.json" "$serve0" "$serve1" "$redis0" "$redis1" "$bench0" "$bench1" <<'PY'
import json, os, sys
store, round_, bin_, path = sys.argv[1:5]
serve0, serve1, redis0, redis1, bench0, bench1 = map(int, sys.argv[5:])
rate = json.load(open(path))[0]["sustained"]["completed_per_second"]
ticks = os.sysconf("SC_CLK_TCK")
per_task = lambda d: d / ticks * 1e6 / (rate * 8)
line = f"{store} round {round_} {bin_}: sustained {rate:.0f}/s; CPU per task: serve {per_task(serve1 - serve0):.1f} µs"
if store == "redis":
    line += f", redis-server {per_task(redis1 - redis0):.1f} µs"
print(line + f", bench {per_task(bench1 - bench0):.1f} µs")
PY
    stop_serve
  done
done
