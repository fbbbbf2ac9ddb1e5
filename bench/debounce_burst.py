# Debounce over HTTP, as issue R states its goal: UPDATES debounced schedules of one
# key, evenly spread over SECONDS, each `{"delay": "2s", "debounce": {"max_wait":
# MAX_WAIT}}` with its sequence number as the payload, against one `punctual serve` on
# the embedded store; meanwhile one pull loop long-polls the queue and acknowledges
# each task it gets. It reports each firing (seconds since the first update, the
# sequence number it carried, the newest sequence number sent before it was leased),
# the largest gap between firings, and whether the last update fired. One JSON line.
#
#   python3 bench/debounce_burst.py target/release/punctual 1000 30 10
import http.client, json, os, socket, subprocess, sys, tempfile, threading, time

BIN, UPDATES, SECONDS, MAX_WAIT = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
QUEUE, KEY = "order.notify", "order-1234"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


port = free_port()
data = tempfile.mkdtemp()
server = subprocess.Popen([BIN, "serve", "--data", data, "--listen", f"127.0.0.1:{port}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def call(conn, method, path, body=None):
    conn.request(method, path, json.dumps(body) if body is not None else None, {"content-type": "application/json"})
    answer = conn.getresponse()
    text = answer.read()
    assert answer.status < 300, (method, path, answer.status, text)
    return json.loads(text) if text else None


for _ in range(100):
    try:
        call(http.client.HTTPConnection("127.0.0.1", port), "GET", "/healthz")
        break
    except (ConnectionError, OSError):
        time.sleep(0.1)

sent = -1  # the newest sequence number the server accepted
firings = []
start = time.monotonic()
done = threading.Event()


def pull():
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while not done.is_set():
        answer = call(conn, "POST", f"/v1/queues/{QUEUE}/lease", {"max": 10, "wait": "1s", "lease": "30s"})
        for lease in answer["leases"]:
            newest = sent
            firings.append((round(time.monotonic() - start, 3), lease["task"]["payload"]["seq"], newest))
            call(conn, "POST", f"/v1/leases/{lease['lease_id']}/ack", {"outcome": "done"})
            if lease["task"]["payload"]["seq"] == UPDATES - 1:
                done.set()


puller = threading.Thread(target=pull)
puller.start()
conn = http.client.HTTPConnection("127.0.0.1", port)
for seq in range(UPDATES):
    # Paced: update `seq` goes out at its share of the run, whatever the server answers.
    time.sleep(max(0.0, start + seq * SECONDS / UPDATES - time.monotonic()))
    body = {"delay": "2s", "payload": {"seq": seq}, "debounce": {"max_wait": f"{MAX_WAIT}s"}}
    call(conn, "PUT", f"/v1/queues/{QUEUE}/tasks/{KEY}", body)
    sent = seq
done.wait(MAX_WAIT + 10)
done.set()
puller.join()
server.terminate()
server.wait()

gaps = [b[0] - a[0] for a, b in zip(firings, firings[1:])]
print(json.dumps({
    "updates": UPDATES, "seconds": SECONDS, "max_wait_s": MAX_WAIT,
    "firings": len(firings), "smallest_gap_s": round(min(gaps), 3) if gaps else None,
    "largest_gap_s": round(max(gaps), 3) if gaps else None,
    "last_update_fired": bool(firings) and firings[-1][1] == UPDATES - 1,
    "each_firing_carried_the_newest_update": all(seq >= newest - 1 for _, seq, newest in firings),
    "firings_at": firings,
}))
