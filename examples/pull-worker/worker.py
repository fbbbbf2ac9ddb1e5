"""A pull worker for punctual with the Python client (clients/python).

Handles the tasks of one queue, four at a time, with leases extended while a handler
runs, acks batched, reconnection when the server goes away, and a graceful stop on
Ctrl-C / SIGTERM. The server comes from $PUNCTUAL_SERVER (default
http://127.0.0.1:7575) and the token from $PUNCTUAL_TOKEN.

    pip install -e clients/python
    python3 examples/pull-worker/worker.py order.cancel
"""
import logging
import sys

import punctual

QUEUE = sys.argv[1] if len(sys.argv) > 1 else "order.cancel"

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
worker = punctual.Worker(punctual.Client(), lease_for=30)


@worker.handler(QUEUE, concurrency=4)
def cancel_unpaid_order(task: punctual.Lease):
    """Your code. Return normally when done; raise to retry with backoff."""
    if task.payload is None:
        return punctual.Fail("no payload: nothing to cancel")
    print(f"cancelling unpaid order {task.key} (payload {task.payload}, attempt {task.attempt})",
          flush=True)
    return punctual.Done()


if __name__ == "__main__":
    worker.run(grace=10)
