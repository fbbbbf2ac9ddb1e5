#!/usr/bin/env bash
# Drives the workflow-reminders example with shortened times: 24 h becomes 4 s, 48 h
# becomes 10 s. Run from the repository root: examples/workflow-reminders/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PUNCTUAL=${PUNCTUAL:-target/debug/punctual}
[ -x "$PUNCTUAL" ] || cargo build -q -p punctual-cli
PORT=7576
API=http://127.0.0.1:$PORT
export WECOM_KEY=demo-wecom-key DINGTALK_SECRET=SECdemo-dingtalk-secret
DATA=$(mktemp -d)
cleanup() { kill "$ROBOTS" "$SERVER" 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT

python3 examples/workflow-reminders/robots.py 8765 & ROBOTS=$!
"$PUNCTUAL" check-config examples/workflow-reminders/punctual.toml
RUST_LOG=warn "$PUNCTUAL" serve --config examples/workflow-reminders/punctual.toml --data "$DATA" --listen 127.0.0.1:$PORT & SERVER=$!
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
