#!/usr/bin/env python3
"""A stand-in shop for the order-timeout example: it receives punctual's webhook
"order.cancel", verifies the signature, and cancels the order if it is still unpaid.

Idempotent by delivery id: a delivery seen before (punctual retried after a timeout,
or the process died before the ack) is answered "done" again without acting twice.
The first delivery of order-3 is answered 503 to show a retry with the same id.
Standard library only.
"""
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["ORDER_HOOK_SECRET"].encode()
orders = {"order-1": "unpaid", "order-2": "unpaid", "order-3": "unpaid"}
handled = set()  # delivery ids already acted on (a database table in real life)
refused_once = set()


def verify(header, body, tolerance=300):
    # Every v1 counts: while the server's secret is rotated it signs with two.
    fields = [part.split("=", 1) for part in header.split(",") if "=" in part]
    t = next((value for name, value in fields if name == "t"), None)
    signatures = [value for name, value in fields if name == "v1"]
    if t is None or not signatures:
        return False
    expected = hmac.new(SECRET, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    matched = [hmac.compare_digest(expected, sent) for sent in signatures]
    return any(matched) and abs(time.time() - int(t)) <= tolerance


class Shop(BaseHTTPRequestHandler):
    def reply(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if not verify(self.headers.get("Punctual-Signature", "t=0,v1="), body):
            return self.reply(401, b"bad signature")
        delivery = json.loads(body)
        order, delivery_id = delivery["key"], delivery["delivery_id"]
        if delivery_id in handled:
            print(f"  shop: {order}: delivery {delivery_id} seen before, nothing to do", flush=True)
            return self.reply(200)
        if order == "order-3" and order not in refused_once:
            refused_once.add(order)
            print(f"  shop: {order}: busy (503), punctual will retry (attempt {delivery['attempt']}, delivery {delivery_id})", flush=True)
            return self.reply(503, b"busy")
        if orders.get(order) != "unpaid":
            print(f"  shop: {order} is {orders.get(order)}: gone", flush=True)
            handled.add(delivery_id)
            return self.reply(410)
        orders[order] = "cancelled"
        handled.add(delivery_id)
        print(f"  shop: {order} still unpaid after its timeout: cancelled (attempt {delivery['attempt']}, "
              f"delivery {delivery_id})", flush=True)
        return self.reply(200, b'{"outcome":"done"}')

    def do_GET(self):
        self.reply(200, json.dumps(orders).encode())

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8766
    ThreadingHTTPServer(("127.0.0.1", port), Shop).serve_forever()
