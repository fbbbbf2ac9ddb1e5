# Fairness between groups over HTTP, as issue R states its goal: one group with BIG due
# tasks, then SMALL groups with one due task each, on one `punctual serve` (embedded
# store). A pull loop then leases batches of BATCH and acknowledges each batch; the run
# reports, for the small groups' tasks, at which lease (1 = the first task handed out)
# each was handed out, and the same with the tasks in no group (the queue as it ran
# before groups: one due order). One JSON line.
#
#   python3 bench/group_fairness.py target/release/punctual 100000 100 100
import http.client, json, socket, subprocess, sys, tempfile, time

BIN, BIG, SMALL, BATCH = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(conn, method, path, body=None):
    conn.request(method, path, json.dumps(body) if body is not None else None, {"content-type": "application/json"})
    answer = conn.getresponse()
    text = answer.read()
    assert answer.status < 300, (method, path, answer.status, text)
    return json.loads(text) if text else None


def run(grouped):
    port = free_port()
    data = tempfile.mkdtemp()
    server = subprocess.Popen([BIN, "serve", "--data", data, "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                call(http.client.HTTPConnection("127.0.0.1", port), "GET", "/healthz")
                break
            except (ConnectionError, OSError):
                time.sleep(0.1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        queue = "order.cancel"
        # The big group first, then the small ones: in due order, the small ones come last.
        for first in range(0, BIG, 1000):
            tasks = [{"key": f"big-{n:06}"} for n in range(first, min(first + 1000, BIG))]
            if grouped:
                for task in tasks:
                    task["group"] = "big"  # sorts before the small ones: no head start from names
            call(conn, "POST", f"/v1/queues/{queue}/tasks", {"tasks": tasks})
        small = [{"key": f"small-{n:04}"} for n in range(SMALL)]
        if grouped:
            for n, task in enumerate(small):
                task["group"] = f"merchant-{n:04}"
        call(conn, "POST", f"/v1/queues/{queue}/tasks", {"tasks": small})
        positions, handed_out, started = [], 0, time.monotonic()
        while len(positions) < SMALL:
            leases = call(conn, "POST", f"/v1/queues/{queue}/lease", {"max": BATCH, "wait": "1s"})["leases"]
            assert leases, "the queue ran dry before every small task was handed out"
            for lease in leases:
                handed_out += 1
                if lease["task"]["key"].startswith("small-"):
                    positions.append(handed_out)
            call(conn, "POST", "/v1/acks", {"acks": [{"lease_id": l["lease_id"], "outcome": "done"} for l in leases]})
        return {"last_small_at_lease": max(positions), "median_small_at_lease": sorted(positions)[len(positions) // 2],
                "first_small_at_lease": min(positions), "seconds": round(time.monotonic() - started, 3)}
    finally:
        server.terminate()
        server.wait()


print(json.dumps({"big": BIG, "small_groups": SMALL, "lease_batch": BATCH,
                  "groups": run(True), "no_groups": run(False)}))
