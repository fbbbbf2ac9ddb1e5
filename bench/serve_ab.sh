#!/usr/bin/env bash
# Two builds of `punctual serve` (a fresh store each run) under the same bench binary,
# alternated ROUNDS times: `bench throughput` over HTTP, one line per run with single
# and batch schedule rates and the sustained schedule + fire + ack.
#
#   bench/serve_ab.sh BEFORE_BIN AFTER_BIN [ROUNDS] [BENCH_BIN]
#
# The embedded store in a fresh data directory; with STORE=redis, a fresh
# `redis-server` of the run's own (no persistence) on a free port instead.
set -euo pipefail
before=$1 after=$2 rounds=${3:-3} bench=${4:-target/release/punctual}
store=${STORE:-embedded}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for round in $(seq "$rounds"); do
  for which in before after; do
    bin=${!which}
    dir=$(mktemp -d)
    port=$(free_port)
    store_args=(--data "$dir")
    redis_pid=
    if [ "$store" = redis ]; then
      redis_port=$(free_port)
      redis-server --port "$redis_port" --save "" --appendonly no --dir "$dir" >/dev/null 2>&1 &
      redis_pid=$!
      for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
      store_args=(--store "redis://127.0.0.1:$redis_port")
    fi
    "$bin" serve "${store_args[@]}" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    "$bench" bench throughput --server "http://127.0.0.1:$port" --baselines=false --duration 10s --json 2>/dev/null |
      python3 -c "
import json, sys
d = json.load(sys.stdin)[0]; s = d['sustained']
print('$store $which round $round: single %d/s, batch %d/s, sustained completed %d/s, lost %d, duplicates %d' % (
    d['schedule_single_per_second'], d['schedule_batch_per_second'], s['completed_per_second'], s['lost'], s['duplicates']))"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    if [ -n "$redis_pid" ]; then kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true; fi
    rm -rf "$dir"
  done
done
