"""A pull worker for punctual in plain Python (standard library only).

Long-polls a queue, handles each task, and acknowledges it. Run a server first
(`cargo run --release -- serve`), then: `python3 examples/pull-worker/worker.py order.cancel`.
"""
import json
import sys
import urllib.request

SERVER = "http://127.0.0.1:7575"
QUEUE = sys.argv[1] if len(sys.argv) > 1 else "order.cancel"


def call(method, path, body=None):
    request = urllib.request.Request(
        SERVER + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=90) as response:
        text = response.read()
        return json.loads(text) if text else None


def handle(task):
    """Your code. Return normally when done; raise to retry with backoff."""
    print(f"cancelling unpaid order {task['key']} (payload {task['payload']})", flush=True)


while True:
    # Answers the moment a task falls due, or with no leases after 20 s.
    leases = call("POST", f"/v1/queues/{QUEUE}/lease", {"max": 10, "lease": "30s", "wait": "20s"})["leases"]
    for lease in leases:
        try:
            handle(lease["task"])
            outcome = {"outcome": "done"}
        except Exception as error:  # any failure: try again later, with backoff
            outcome = {"outcome": "retry", "error": str(error)}
        call("POST", f"/v1/leases/{lease['lease_id']}/ack", outcome)
