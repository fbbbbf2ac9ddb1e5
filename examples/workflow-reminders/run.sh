#!/usr/bin/env bash
# Drives the workflow-reminders example with shortened times: 24 h becomes 4 s, 48 h
# becomes 10 s. Then schedules the same step in business time (working hours of the
# cn-office calendar) and prints the due times the server resolved, and why.
# Run from the repository root: examples/workflow-reminders/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PUNCTUAL=${PUNCTUAL:-target/debug/punctual}
[ -x "$PUNCTUAL" ] || cargo build -q -p punctual-cli
PORT=7576
API=http://127.0.0.1:$PORT
export WECOM_KEY=demo-wecom-key DINGTALK_SECRET=SECdemo-dingtalk-secret
WORK=$(mktemp -d)
cleanup() { kill "$ROBOTS" "$SERVER" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# The example's config with the office calendar's table appended: a Shanghai office on
# mainland China's public holidays and 调休 days (served read-only, as `source: config`).
CONFIG=$WORK/punctual.toml
cat examples/workflow-reminders/punctual.toml examples/calendars/cn-office.toml > "$CONFIG"
python3 examples/workflow-reminders/robots.py 8765 & ROBOTS=$!
"$PUNCTUAL" check-config "$CONFIG"
RUST_LOG=warn "$PUNCTUAL" serve --config "$CONFIG" --data "$WORK/data" --listen 127.0.0.1:$PORT & SERVER=$!
for _ in $(seq 50); do curl -sf $API/healthz >/dev/null && break; sleep 0.1; done

step='{"workflow": "express-return #9", "step": "chief approval", "assignee": "Zhang Wei",
       "assignee_id": "zhangwei", "manager": "Li Na", "manager_mobile": "13800001111"}'
echo "== step 'chief approval' of pi-9 starts: remind every 4 s (24 h), tell the manager after 10 s (48 h)"
"$PUNCTUAL" schedule flow.remind-assignee pi-9 --server $API --delay 4s --repeat-every 4s --tag pi-9 --payload "$step" >/dev/null
"$PUNCTUAL" schedule flow.tell-manager pi-9 --server $API --delay 10s --tag pi-9 --payload "$step" >/dev/null
sleep 13
echo "== the step is done: cancel every task tagged pi-9"
curl -sf -X DELETE $API/v1/queues/flow.remind-assignee/tags/pi-9; echo
curl -sf -X DELETE $API/v1/queues/flow.tell-manager/tags/pi-9; echo
sleep 5
echo "== no reminder after the cancel; queues now:"
"$PUNCTUAL" ls --server $API

echo
echo "== the same step in business time: remind after 8 working hours, then every working day at 09:30,"
echo "   tell the manager after 2 working days (calendar cn-office; the server's clock, its answers)"
"$PUNCTUAL" schedule flow.remind approve-42 --server $API --delay 8h --calendar cn-office --tag approve-42 \
  --payload "$step" >/dev/null
"$PUNCTUAL" schedule flow.remind approve-42-daily --server $API --repeat-cron '30 9 * * *' --tz Asia/Shanghai \
  --calendar cn-office --misfire fire-once --tag approve-42 --payload "$step" >/dev/null
"$PUNCTUAL" schedule flow.escalate approve-42 --server $API --delay 2d --calendar cn-office --tag approve-42 \
  --payload "$step" >/dev/null
python3 examples/workflow-reminders/explain.py $API cn-office \
  "first reminder|flow.remind|approve-42|+ 8 working hours" \
  "daily reminder|flow.remind|approve-42-daily|→ the first 09:30 the office is open" \
  "tell the manager|flow.escalate|approve-42|+ 2 working days"
echo "== approve-42 is approved: cancel all three by their tag"
curl -sf -X DELETE $API/v1/queues/flow.remind/tags/approve-42; echo
curl -sf -X DELETE $API/v1/queues/flow.escalate/tags/approve-42; echo
