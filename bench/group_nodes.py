# The group limit across nodes, as issue R states its goal: three `punctual serve` on one
# Redis, GROUPS groups of PER_GROUP tasks each, `group_concurrency = 1`, WORKERS pull
# workers per server leasing up to 5 at a time and acknowledging each task. The run
# counts overlaps (a group holding two leases at once, as the workers saw them) and the
# groups whose tasks were not handed out in due order. Starts its own redis-server in a
# temp dir and kills it after. One JSON line.
#
#   python3 bench/group_nodes.py target/release/punctual 1000 20 4
import http.client, json, os, shutil, socket, subprocess, sys, tempfile, threading, time

BIN, GROUPS, PER_GROUP, WORKERS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
SERVERS, QUEUE = 3, "order.cancel"


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


def wait_for(port, what):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not open port {port}")


def main():
    if not shutil.which("redis-server"):
        sys.exit("redis-server is not installed: apt-get install -y --no-install-recommends redis-server")
    scratch = tempfile.mkdtemp()
    redis_port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--dir", scratch, "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers, ports = [], []
    try:
        wait_for(redis_port, "redis-server")
        for _ in range(SERVERS):
            port = free_port()
            servers.append(subprocess.Popen([BIN, "serve", "--store", f"redis://127.0.0.1:{redis_port}",
                                             "--listen", f"127.0.0.1:{port}"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            ports.append(port)
        for port in ports:
            wait_for(port, "punctual serve")
        first = http.client.HTTPConnection("127.0.0.1", ports[0], timeout=60)
        call(first, "PUT", f"/v1/queues/{QUEUE}/settings", {"group_concurrency": 1})
        for port in ports:  # every server reads the settings within a poll of its queue records
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            while call(conn, "GET", f"/v1/queues/{QUEUE}/settings").get("group_concurrency") != 1:
                time.sleep(0.05)
        # Due in index order within each group, a little after scheduling ends; written
        # newest first so that insertion order is not due order.
        due = int(time.time() * 1000) + 3_000 + GROUPS * 2
        batch = []
        for g in range(GROUPS):
            for i in reversed(range(PER_GROUP)):
                batch.append({"key": f"g{g:05}-t{i:04}", "group": f"customer-{g:05}", "due_at": due + 10 * i})
                if len(batch) == 1000:
                    call(first, "POST", f"/v1/queues/{QUEUE}/tasks", {"tasks": batch})
                    batch = []
        if batch:
            call(first, "POST", f"/v1/queues/{QUEUE}/tasks", {"tasks": batch})
        total = GROUPS * PER_GROUP
        lock = threading.Lock()
        holding, order, state = {}, {}, {"done": 0, "overlaps": 0, "failed": None}

        def worker(port):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                while state["done"] < total and state["failed"] is None:
                    leases = call(conn, "POST", f"/v1/queues/{QUEUE}/lease", {"max": 5, "wait": "1s", "lease": "60s"})["leases"]
                    with lock:
                        for lease in leases:
                            task = lease["task"]
                            holding[task["group"]] = holding.get(task["group"], 0) + 1
                            if holding[task["group"]] > 1:
                                state["overlaps"] += 1
                            order.setdefault(task["group"], []).append(int(task["key"][-4:]))
                    for lease in leases:
                        with lock:  # let go before the ack: the group's next may be leased once it lands
                            holding[lease["task"]["group"]] -= 1
                        call(conn, "POST", f"/v1/leases/{lease['lease_id']}/ack", {"outcome": "done"})
                        with lock:
                            state["done"] += 1
            except Exception as error:  # noqa: BLE001 - reported in the JSON line
                state["failed"] = repr(error)

        started = time.monotonic()
        threads = [threading.Thread(target=worker, args=(port,)) for port in ports for _ in range(WORKERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        out_of_order = sum(1 for indexes in order.values() if indexes != list(range(PER_GROUP)))
        print(json.dumps({
            "servers": SERVERS, "workers_per_server": WORKERS, "groups": GROUPS, "per_group": PER_GROUP,
            "handed_out": sum(len(v) for v in order.values()), "groups_served": len(order),
            "overlaps": state["overlaps"], "groups_out_of_due_order": out_of_order,
            "seconds": round(elapsed, 2), "failed": state["failed"],
        }))
    finally:
        for process in servers + [redis]:
            process.kill()
            process.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
