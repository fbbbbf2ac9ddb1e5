#!/usr/bin/env bash
# Plays the Spring Boot workflow reminders with seconds for hours (the profile `demo`:
# remind every 1 s, the manager after 3 s, unpaid orders cancelled after 2 s) against a
# `punctual serve` of its own, and exits with the demo's status, so CI can run it.
# From the repository root: examples/spring-workflow-reminders/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PUNCTUAL=${PUNCTUAL_BIN:-target/debug/punctual}
[ -x "$PUNCTUAL" ] || cargo build -q -p punctual-cli

# The starter, as clients/spring-boot-starter/run-tests installs it into ~/.m2 once its
# tests pass; built the same way, without its tests, when missing or older than its
# sources or the Java client's.
user_repository="$HOME/.m2/repository"
version=$(sed -n '/<artifactId>punctual-spring-boot-starter<\/artifactId>/{n;s|.*<version>\(.*\)</version>.*|\1|p;}' \
  clients/spring-boot-starter/pom.xml)
starter="$user_repository/io/github/punctual-rs/punctual-spring-boot-starter/$version/punctual-spring-boot-starter-$version.jar"
if [ ! -f "$starter" ] || [ -n "$(find clients/java/src/main clients/java/pom.xml clients/spring-boot-starter/src/main \
    clients/spring-boot-starter/pom.xml -newer "$starter" -type f | head -1)" ]; then
  bash clients/spring-boot-starter/run-tests -q -Dmaven.test.skip=true
fi
mvn -B -q -ntp -Dstyle.color=never -Dmaven.repo.local="$user_repository" -Dpunctual.version="$version" \
  -f examples/spring-workflow-reminders/pom.xml package
# The migration guide's Java and YAML are this application's code (docs/from-redisson.md).
python3 examples/spring-workflow-reminders/check-guide.py

DATA=$(mktemp -d)
SERVER=
APP=
cleanup() {
  [ -z "$APP" ] || kill "$APP" 2>/dev/null || true
  [ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true
  rm -rf "$DATA"
}
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

java -jar examples/spring-workflow-reminders/target/spring-workflow-reminders.jar --spring.profiles.active=demo & APP=$!
status=0
wait "$APP" || status=$?
APP=
exit "$status"
