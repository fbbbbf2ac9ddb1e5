#!/usr/bin/env bash
# `punctual import redisson` against elements written by real Redisson (Maven Central):
# starts its own redis-server on a free port in a temporary directory, offers elements to
# two RDelayedQueues with Redisson (WriteDelayedQueues.java: StringCodec and
# JsonJacksonCodec), starts `punctual serve` on a temporary data directory, runs the
# import of each queue as a dry run and then for real, and checks through the API that
# every delayed element became a task with its due time (within a second) and its
# payload, and that Redisson's keys hold nothing delayed after. Kills what it started.
#
#   PUNCTUAL_BIN=/path/to/punctual bash tests/redisson/run.sh      (default target/debug/punctual)
#
# The first run downloads Redisson and Jackson into the user's Maven repository; after
# that it takes a few seconds. Exits non-zero on the first check that fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
PUNCTUAL=${PUNCTUAL_BIN:-target/debug/punctual}
[ -x "$PUNCTUAL" ] || cargo build -q -p punctual-cli
COUNT=${COUNT:-200}

WORK=$(mktemp -d)
REDIS_PID=
SERVER_PID=
cleanup() {
  [ -z "$SERVER_PID" ] || kill "$SERVER_PID" 2>/dev/null || true
  [ -z "$REDIS_PID" ] || kill "$REDIS_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fail() { echo "redisson: FAILED: $*" >&2; exit 1; }
wait_for() { # what, command…: up to 10 s
  local what=$1; shift
  for _ in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "$what did not come up"
}

# The writer, compiled when its sources changed (Maven resolves Redisson once).
(cd tests/redisson && mvn -B -q -Dstyle.color=never compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt)
CLASSPATH="tests/redisson/target/classes:$(cat tests/redisson/target/classpath.txt)"

REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --logfile "$WORK/redis.log" & REDIS_PID=$!
wait_for redis-server redis-cli -p "$REDIS_PORT" ping
REDIS_URL=redis://127.0.0.1:$REDIS_PORT
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }

java -Dslf4j.internal.verbosity=ERROR -cp "$CLASSPATH" dev.punctual.redissontest.WriteDelayedQueues "$REDIS_URL" "$COUNT" "$WORK/expected.json"

SERVER_PORT=$(free_port)
export PUNCTUAL_SERVER=http://127.0.0.1:$SERVER_PORT
NO_COLOR=1 RUST_LOG=warn "$PUNCTUAL" serve --data "$WORK/data" --listen 127.0.0.1:"$SERVER_PORT" \
  >"$WORK/server.log" 2>&1 & SERVER_PID=$!
wait_for "punctual serve" curl -sf "$PUNCTUAL_SERVER/healthz"

# Every Redisson key's content, to see that a dry run changes nothing.
snapshot() {
  for name in 'flow:reminder' '{shop}order-cancel'; do
    braced=$name; [[ $name == *"{"* ]] || braced="{$name}"
    rcli ZRANGE "redisson_delay_queue_timeout:$braced" 0 -1 WITHSCORES
    rcli LRANGE "redisson_delay_queue:$braced" 0 -1
    rcli LRANGE "$name" 0 -1
  done | sha256sum
}
now_ms() { date +%s%3N; }
TEXTS=(--delayed-queue 'flow:reminder' --codec string --queue flow.reminder)
ORDERS=(--delayed-queue '{shop}order-cancel' --codec json-jackson --key-field orderId --queue order.cancel)

before=$(snapshot)
"$PUNCTUAL" import redisson --redis "$REDIS_URL" "${TEXTS[@]}" --dry-run --json >"$WORK/dry-texts.json"
"$PUNCTUAL" import redisson --redis "$REDIS_URL" "${ORDERS[@]}" --dry-run --json >"$WORK/dry-orders.json"
[ "$(snapshot)" = "$before" ] || fail "a dry run changed Redis"

started=$(now_ms)
"$PUNCTUAL" import redisson --redis "$REDIS_URL" "${TEXTS[@]}" --json >"$WORK/texts.json"
"$PUNCTUAL" import redisson --redis "$REDIS_URL" "${ORDERS[@]}" --json >"$WORK/orders.json"
ended=$(now_ms)

for key in 'redisson_delay_queue_timeout:{flow:reminder}' 'redisson_delay_queue:{flow:reminder}' \
    'redisson_delay_queue_timeout:{shop}order-cancel' 'redisson_delay_queue:{shop}order-cancel' '{shop}order-cancel'; do
  [ "$(rcli EXISTS "$key")" = 0 ] || fail "$key still holds $(rcli TYPE "$key") data after the import"
done
[ "$(rcli LRANGE 'flow:reminder' 0 -1)" = already-due ] || fail "the element Redisson had moved is not left in flow:reminder"

python3 tests/redisson/check.py "$WORK" "$COUNT" "$started" "$ended"
