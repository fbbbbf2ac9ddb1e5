#!/usr/bin/env bash
# Plays the order-outbox example with the 30-minute timeout shortened to 3 s, in a
# database of its own on the local PostgreSQL (dropped on exit), then checks it: exit 0
# when each committed order got its cancel right and the rolled-back ones left nothing
# anywhere, 1 otherwise, so CI can run it. From the repository root:
# examples/order-outbox/run.sh
#
# Needs what `bash .ci/run services` installs and starts (PostgreSQL on 127.0.0.1:5432,
# trust for the user postgres; Java 17 and Maven; Python 3 and curl); PGHOST, PGPORT and
# PGUSER point it elsewhere. Builds `punctual` if missing, or set PUNCTUAL_BIN.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=examples/order-outbox
PUNCTUAL=${PUNCTUAL_BIN:-target/debug/punctual}
[ -x "$PUNCTUAL" ] || cargo build -q -p punctual-cli

# Python: the client's virtualenv, made as clients/python/run-tests makes it (its test
# extras hold psycopg).
venv=${PUNCTUAL_PY_VENV:-clients/python/.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [ ! -f "$venv/.installed" ] || [ clients/python/pyproject.toml -nt "$venv/.installed" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "clients/python[test]"
  touch "$venv/.installed"
fi

# Java: the client compiled offline when a source is newer, and PostgreSQL's JDBC driver
# where clients/java/run-tests fetches it.
DRIVER=$HOME/.m2/repository/org/postgresql/postgresql/42.7.14/postgresql-42.7.14.jar
if [ ! -f "$DRIVER" ]; then
  (cd "${TMPDIR:-/tmp}" && mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:2.8:get \
    -Dartifact=org.postgresql:postgresql:42.7.14 -Dtransitive=false -Dmaven.repo.local="$HOME/.m2/repository")
fi
if [ ! -f clients/java/target/classes/dev/punctual/Outbox.class ] ||
   [ -n "$(find clients/java/src/main -newer clients/java/target/classes/dev/punctual/Outbox.class -name '*.java' | head -1)" ]; then
  mvn -o -B -q -Dmaven.repo.local=/usr/share/maven-repo -f clients/java/pom.xml compile
fi
M2=/usr/share/maven-repo/com/fasterxml/jackson/core
CP=clients/java/target/classes:$M2/jackson-databind/2.14.0/jackson-databind-2.14.0.jar:$M2/jackson-core/2.14.1/jackson-core-2.14.1.jar:$M2/jackson-annotations/2.14.0/jackson-annotations-2.14.0.jar:$DRIVER

export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
DB=punctual_example_$(date +%s)_$$
export SHOP_DATABASE_URL=postgres://$PGUSER@$PGHOST:$PGPORT/$DB
export ORDER_TIMEOUT=${ORDER_TIMEOUT:-3s} ORDER_HOOK_SECRET=whsec-demo
sql() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

DATA=$(mktemp -d)
SHOP= SERVER=
cleanup() {
  for pid in $SHOP $SERVER; do kill "$pid" 2>/dev/null || true; done
  for pid in $SHOP $SERVER; do wait "$pid" 2>/dev/null || true; done
  psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" || true
  rm -rf "$DATA"
}
trap cleanup EXIT

read -r SHOP_PORT PORT < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
export SHOP_HOOK_URL=http://127.0.0.1:$SHOP_PORT/hooks/order-cancel
export PUNCTUAL_SERVER=http://127.0.0.1:$PORT

# Waits until "$@" succeeds, for up to $1 seconds.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}
up() { kill -0 "$1" 2>/dev/null && curl -s -o /dev/null "$2"; }
drained() {
  "$PUNCTUAL" outbox status --url "$SHOP_DATABASE_URL" --json |
    python3 -c 'import json, sys; status = json.load(sys.stdin); sys.exit(status["rows_waiting"] != 0)'
}
no_unpaid() { [ "$(sql -At -c "SELECT count(*) FROM orders WHERE status = 'unpaid'")" = 0 ]; }
no_tasks() {
  "$PUNCTUAL" ls order.cancel --json | python3 -c 'import json, sys; sys.exit(len(json.load(sys.stdin)["tasks"]) != 0)'
}

echo "== database $DB: the shop's tables and punctual's outbox"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB"
sql -f $HERE/schema.sql
"$PUNCTUAL" outbox init --url "$SHOP_DATABASE_URL"
"$venv/bin/python" $HERE/shop.py serve "$SHOP_PORT" & SHOP=$!
"$PUNCTUAL" check-config $HERE/punctual.toml
NO_COLOR=1 RUST_LOG=warn "$PUNCTUAL" serve --config $HERE/punctual.toml --data "$DATA" \
  --listen 127.0.0.1:"$PORT" & SERVER=$!
wait_for 30 up "$SHOP" "http://127.0.0.1:$SHOP_PORT/" || { echo "the shop did not start" >&2; exit 2; }
wait_for 30 up "$SERVER" "$PUNCTUAL_SERVER/healthz" || { echo "punctual serve did not start" >&2; exit 2; }

echo "== shop.py (psycopg): orders placed, paid and rolled back; the timeout is $ORDER_TIMEOUT (30m in real life)"
"$venv/bin/python" $HERE/shop.py orders
wait_for 30 drained || { echo "the outbox was not drained" >&2; exit 1; }
"$PUNCTUAL" ls order.cancel

echo "== OrderOutbox.java (JDBC): the same"
java -cp "$CP" $HERE/OrderOutbox.java
wait_for 30 drained || { echo "the outbox was not drained" >&2; exit 1; }
"$PUNCTUAL" outbox status --url "$SHOP_DATABASE_URL"

echo "== waiting for the timeouts"
wait_for 30 no_unpaid || echo "some orders are still unpaid after their timeout"
wait_for 30 no_tasks || echo "some tasks are still in punctual"

echo "== orders (every id the sequence handed out; a missing one was rolled back)"
sql -P footer=off -c "
  SELECT 'order-' || n AS \"order\", o.customer, o.quantity || ' x ' || o.sku AS items, o.placed_by,
         coalesce(o.status, '(no row)') AS status,
         coalesce((SELECT string_agg(outcome, ', ') FROM deliveries d WHERE d.order_id = n), '') AS webhook
  FROM generate_series(1, (SELECT last_value FROM orders_id_seq)) n LEFT JOIN orders o ON o.id = n
  ORDER BY n"

# The checks: a cancelled order had one delivery, which cancelled it; a paid one and a
# rolled-back one had none; none is left unpaid; punctual holds no task of any.
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
counts=""
while IFS='|' read -r id status deliveries cancelling; do
  counts+=" $status"
  case "$status" in
    cancelled)
      [ "$deliveries" = 1 ] && [ "$cancelling" = 1 ] ||
        fail "order-$id: $deliveries deliveries, $cancelling of which cancelled it" ;;
    paid | absent) [ "$deliveries" = 0 ] || fail "order-$id is $status but its webhook was called $deliveries time(s)" ;;
    *) fail "order-$id is $status" ;;
  esac
  if answer=$("$PUNCTUAL" get order.cancel "order-$id" 2>&1); then
    fail "order-$id ($status) still has a task in punctual: $answer"
  elif [ "$status" = absent ]; then
    echo "rolled back: punctual get order.cancel order-$id: $answer"
  fi
done < <(sql -At -F '|' -c "
  SELECT n, coalesce(o.status, 'absent'),
         (SELECT count(*) FROM deliveries d WHERE d.order_id = n),
         (SELECT count(*) FROM deliveries d WHERE d.order_id = n AND d.outcome = 'cancelled')
  FROM generate_series(1, (SELECT last_value FROM orders_id_seq)) n LEFT JOIN orders o ON o.id = n
  ORDER BY n")
summary=$(tr ' ' '\n' <<<"$counts" | sed '/^$/d' | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}')
[ "$summary" = "2 absent, 2 cancelled, 2 paid, " ] ||
  fail "expected 2 cancelled, 2 paid and 2 rolled back (absent), got: $summary"
[ "$(sql -At -c 'SELECT count(*) FROM punctual_outbox_failed')" = 0 ] || fail "rows in punctual_outbox_failed"
if [ "$failures" -gt 0 ]; then
  echo "== $failures check(s) failed"
  exit 1
fi
echo "== OK: 2 orders cancelled at their timeout, 2 paid with their cancel, 2 rolled back with no trace in punctual"
