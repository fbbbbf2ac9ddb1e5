#!/usr/bin/env python3
"""The shop of the order-outbox example, on PostgreSQL with psycopg 3.

    shop.py orders       place, pay and fail to place orders: each in ONE transaction
                         with its outbox row (the order's cancel scheduled, or cancelled)
    shop.py serve PORT   receive punctual's "order.cancel" webhook: cancel the order if
                         it is still unpaid, once per delivery_id

Environment: SHOP_DATABASE_URL (postgres://user@host/db), ORDER_TIMEOUT (orders; default
30m), ORDER_HOOK_SECRET (serve).

The order and the schedule of its cancel commit together or not at all: there is no
moment at which one exists without the other, whatever crashes or rolls back.
"""
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg

import punctual.outbox as outbox

DATABASE = os.environ["SHOP_DATABASE_URL"]
QUEUE = "order.cancel"


class OutOfStock(Exception):
    def __init__(self, order_id, sku):
        super().__init__(f"not enough {sku} in stock")
        self.order_id = order_id


def place_order(conn, customer, sku, quantity, timeout):
    """The order, the schedule of its cancel and the stock it takes, in one transaction."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(
            "INSERT INTO orders (customer, sku, quantity, placed_by) VALUES (%s, %s, %s, 'shop.py') RETURNING id",
            (customer, sku, quantity),
        )
        (order_id,) = cur.fetchone()
        outbox.schedule(cur, QUEUE, f"order-{order_id}", delay=timeout, payload={"order_id": order_id})
        # Checked after the outbox row is written: when it fails, the rollback takes the
        # order and its outbox row away together.
        cur.execute("UPDATE products SET stock = stock - %s WHERE sku = %s AND stock >= %s", (quantity, sku, quantity))
        if cur.rowcount == 0:
            raise OutOfStock(order_id, sku)
    return order_id


def pay_order(conn, order_id):
    """The order paid and its cancel cancelled, in one transaction."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("UPDATE orders SET status = 'paid' WHERE id = %s AND status = 'unpaid'", (order_id,))
        if cur.rowcount == 0:
            raise RuntimeError(f"order-{order_id} is no longer unpaid")
        outbox.cancel(cur, QUEUE, f"order-{order_id}")


def orders():
    timeout = os.environ.get("ORDER_TIMEOUT", "30m")
    with psycopg.connect(DATABASE, autocommit=True) as conn:
        ada = place_order(conn, "ada", "tea", 2, timeout)
        print(f"[shop.py] order-{ada} (ada, 2 x tea) placed; its cancel in {timeout} committed with it")
        bo = place_order(conn, "bo", "tea", 1, timeout)
        pay_order(conn, bo)
        print(f"[shop.py] order-{bo} (bo, 1 x tea) placed, then paid; its cancel cancelled in the payment's transaction")
        try:
            place_order(conn, "cy", "kettle", 2, timeout)
        except OutOfStock as refused:
            print(f"[shop.py] order-{refused.order_id} (cy, 2 x kettle) rolled back, its outbox row with it: {refused}")


SECRET = os.environ.get("ORDER_HOOK_SECRET", "").encode()


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


class Receiver(BaseHTTPRequestHandler):
    def reply(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if not verify(self.headers.get("Punctual-Signature", ""), body):
            return self.reply(401, b"bad signature")
        delivery = json.loads(body)
        order_id, delivery_id = delivery["payload"]["order_id"], delivery["delivery_id"]
        # The delivery recorded and the order cancelled in one transaction: a delivery
        # retried (punctual timed out, or died before the answer) finds its record.
        with psycopg.connect(DATABASE, autocommit=True) as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute(
                "INSERT INTO deliveries (delivery_id, order_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (delivery_id, order_id),
            )
            if cur.rowcount == 0:
                print(f"  shop: order-{order_id}: delivery {delivery_id} seen before, nothing to do", flush=True)
                return self.reply(200)
            cur.execute(
                "UPDATE orders SET status = 'cancelled' WHERE id = %s AND status = 'unpaid' RETURNING sku, quantity",
                (order_id,),
            )
            taken = cur.fetchone()
            if taken is not None:
                cur.execute("UPDATE products SET stock = stock + %s WHERE sku = %s", (taken[1], taken[0]))
            outcome = "cancelled" if taken else "gone"
            cur.execute("UPDATE deliveries SET outcome = %s WHERE delivery_id = %s", (outcome, delivery_id))
        if taken is None:
            print(f"  shop: order-{order_id} is paid or does not exist: nothing to cancel (410)", flush=True)
            return self.reply(410)
        print(f"  shop: order-{order_id} still unpaid at its timeout: cancelled (delivery {delivery_id})", flush=True)
        return self.reply(200, b'{"outcome":"done"}')

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    if sys.argv[1:2] == ["orders"]:
        orders()
    elif sys.argv[1:2] == ["serve"] and len(sys.argv) == 3:
        ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Receiver).serve_forever()
    else:
        sys.exit(f"usage: {sys.argv[0]} orders | serve PORT")
