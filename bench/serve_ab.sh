#!/usr/bin/env bash
# Two builds of `punctual serve` (embedded store, a fresh data directory each run) under
# the same bench binary, alternated ROUNDS times: `bench throughput` over HTTP, one line
# per run with single and batch schedule rates and the sustained schedule + fire + ack.
#
#   bench/serve_ab.sh BEFORE_BIN AFTER_BIN [ROUNDS] [BENCH_BIN]
set -euo pipefail
before=$1 after=$2 rounds=${3:-3} bench=${4:-target/release/punctual}
for round in $(seq "$rounds"); do
  for which in before after; do
    bin=${!which}
    dir=$(mktemp -d)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$bin" serve --data "$dir" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    "$bench" bench throughput --server "http://127.0.0.1:$port" --baselines=false --duration 10s --json 2>/dev/null |
      python3 -c "
import json, sys
d = json.load(sys.stdin)[0]; s = d['sustained']
print('$which round $round: single %d/s, batch %d/s, sustained completed %d/s, lost %d, duplicates %d' % (
    d['schedule_single_per_second'], d['schedule_batch_per_second'], s['completed_per_second'], s['lost'], s['duplicates']))"
    kill "$pid"; wait "$pid" 2>/dev/null || true; rm -rf "$dir"
  done
done
