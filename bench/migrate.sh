#!/bin/bash
# punctual migrate's rate: N tasks scheduled over HTTP on the embedded store, moved to a
# private redis-server and back, three times (BENCHMARKS.md, "Issue W").
set -euo pipefail
BIN=${BIN:-/work/main/target/debug/punctual}
N=${N:-100000}
W=$(mktemp -d)
PORT=17575; RPORT=16399
$BIN serve --data $W/a --listen 127.0.0.1:$PORT > $W/serve.log 2>&1 & SP=$!
for i in $(seq 50); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.2; done
python3 - "$PORT" "$N" <<'PY'
import json, sys, urllib.request
port, n = int(sys.argv[1]), int(sys.argv[2])
for start in range(0, n, 10000):
    tasks = [{"key": f"o-{i}", "delay": f"{30 + i % 600}m", "payload": {"order": i, "customer": f"c-{i % 977}"}, "tags": ["shop-1"]} for i in range(start, min(n, start + 10000))]
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/queues/order.cancel/tasks", data=json.dumps({"tasks": tasks}).encode(), headers={"content-type": "application/json"}, method="POST")
    urllib.request.urlopen(req).read()
PY
kill -TERM $SP; wait $SP || true
redis-server --port $RPORT --save "" --appendonly no --dir $W > $W/redis.log 2>&1 & RP=$!
sleep 0.5
for run in 1 2 3; do
  redis-cli -p $RPORT flushall >/dev/null
  rm -rf $W/b
  s=$(date +%s.%N); $BIN migrate --from $W/a --to redis://127.0.0.1:$RPORT --json > $W/to.json 2>/dev/null; e=$(date +%s.%N)
  s2=$(date +%s.%N); $BIN migrate --from redis://127.0.0.1:$RPORT --to $W/b --json > $W/back.json 2>/dev/null; e2=$(date +%s.%N)
  python3 -c "import json,sys; a=json.load(open('$W/to.json')); b=json.load(open('$W/back.json')); n=$N; print(f'run $run: embedded->redis {n/($e-$s):,.0f} tasks/s ({$e-$s:.1f} s, check {a[\"check\"][\"same\"]} alike, passed {a[\"passed\"]}); redis->embedded {n/($e2-$s2):,.0f} tasks/s ({$e2-$s2:.1f} s, passed {b[\"passed\"]})')"
done
kill $RP; rm -rf $W
