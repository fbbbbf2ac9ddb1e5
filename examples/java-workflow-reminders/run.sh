#!/usr/bin/env bash
# Plays the Java workflow-reminders example with shortened times: 24 h becomes 1 s,
# 48 h becomes 3 s. Exits with the example's status, so CI can run it.
# From the repository root: examples/java-workflow-reminders/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PUNCTUAL=${PUNCTUAL_BIN:-target/debug/punctual}
[ -x "$PUNCTUAL" ] || cargo build -q -p punctual-cli
M2=/usr/share/maven-repo/com/fasterxml/jackson/core
CP=clients/java/target/classes:$M2/jackson-databind/2.14.0/jackson-databind-2.14.0.jar:$M2/jackson-core/2.14.1/jackson-core-2.14.1.jar:$M2/jackson-annotations/2.14.0/jackson-annotations-2.14.0.jar

# The client, compiled offline against Debian's Maven repository when a source is newer.
if [ ! -f clients/java/target/classes/dev/punctual/PunctualClient.class ] ||
   [ -n "$(find clients/java/src/main -newer clients/java/target/classes/dev/punctual/PunctualClient.class -name '*.java' | head -1)" ]; then
  mvn -o -B -q -Dmaven.repo.local=/usr/share/maven-repo -f clients/java/pom.xml compile
fi

DATA=$(mktemp -d)
SERVER=
cleanup() { [ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export PUNCTUAL_SERVER=http://127.0.0.1:$PORT
NO_COLOR=1 RUST_LOG=warn "$PUNCTUAL" serve --data "$DATA" --listen 127.0.0.1:"$PORT" & SERVER=$!
for _ in $(seq 100); do
  curl -sf "$PUNCTUAL_SERVER/healthz" >/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { echo "punctual serve exited" >&2; exit 2; }
  sleep 0.1
done
curl -sf "$PUNCTUAL_SERVER/healthz" >/dev/null || { echo "punctual serve not up on $PORT" >&2; exit 2; }

REMIND_EVERY=${REMIND_EVERY:-1s} TELL_CHIEF_AFTER=${TELL_CHIEF_AFTER:-3s} \
  java -cp "$CP" examples/java-workflow-reminders/WorkflowReminders.java
