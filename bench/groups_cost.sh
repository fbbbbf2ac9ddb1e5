#!/usr/bin/env bash
# What groups cost a burst over HTTP on the embedded store: `punctual bench burst
# --serve` of TASKS tasks, without groups and spread over GROUPS groups, alternated
# ROUNDS times; one line per run.
#
#   bench/groups_cost.sh [BIN] [TASKS] [GROUPS] [ROUNDS]
set -euo pipefail
bin=${1:-target/release/punctual} tasks=${2:-100000} groups=${3:-1000} rounds=${4:-3}
for round in $(seq "$rounds"); do
  for which in none groups; do
    extra=(); [ "$which" = groups ] && extra=(--groups "$groups")
    "$bin" bench burst --serve --tasks "$tasks" --baselines=false --json -q "${extra[@]}" 2>/dev/null |
      python3 -c "
import json, sys
d = json.load(sys.stdin)[0]
print('$which round $round: drained %d ms, %d tasks/s, lag p50 %s p99 %s, fired %d, lost %d, duplicates %d, scheduled before due %s' % (
    d['drained_in_ms'], d['tasks_per_second'], d['lag_ms']['p50'], d['lag_ms']['p99'], d['fired'], d['lost'],
    d['duplicates'], d['scheduled_before_due']))"
  done
done
