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
. "$(dirname "$0")/serve_run.sh"
for round in $(seq "$rounds"); do
  for which in before after; do
    bin=${!which}
    start_serve "$bin"
    "$bench" bench throughput --server "http://127.0.0.1:$port" --baselines=false --duration 10s --json 2>/dev/null |
      python3 -c "
import json, sys
d = json.load(sys.stdin)[0]; s = d['sustained']
print('$store $which round $round: single %d/s, batch %d/s, sustained completed %d/s, lost %d, duplicates %d' % (
    d['schedule_single_per_second'], d['schedule_batch_per_second'], s['completed_per_second'], s['lost'], s['duplicates']))"
    stop_serve
  done
done
