#!/usr/bin/env bash
# Drives the order-timeout example with the timeout shortened from 30 minutes to 3 s.
# Run from the repository root: examples/order-timeout/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PUNCTUAL=${PUNCTUAL:-target/debug/punctual}
[ -x "$PUNCTUAL" ] || cargo build -q -p punctual-cli
PORT=7577
API=http://127.0.0.1:$PORT
export ORDER_HOOK_SECRET=whsec-demo
DATA=$(mktemp -d)
cleanup() { kill "$SHOP" "$SERVER" 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT

python3 examples/order-timeout/shop.py 8766 & SHOP=$!
"$PUNCTUAL" check-config examples/order-timeout/punctual.toml
RUST_LOG=warn "$PUNCTUAL" serve --config examples/order-timeout/punctual.toml --data "$DATA" --listen 127.0.0.1:$PORT & SERVER=$!
for _ in $(seq 50); do curl -sf $API/healthz >/dev/null && break; sleep 0.1; done

echo "== three orders placed: each is cancelled in 3 s (30 min) unless paid"
for n in 1 2 3; do
  "$PUNCTUAL" schedule order.cancel order-$n --server $API --delay 3s --payload "{\"order_id\": $n}" >/dev/null
done
echo "== order-2 is paid: its timeout is cancelled"
"$PUNCTUAL" cancel order.cancel order-2 --server $API
sleep 6
echo "== orders at the shop: $(curl -sf http://127.0.0.1:8766/)"
"$PUNCTUAL" ls order.cancel --server $API
