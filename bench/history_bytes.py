"""Bytes per history event in the embedded store: starts `punctual serve` (the binary given) on a
fresh data directory, schedules 5,000 tasks in batches, leases and acks them over HTTP, then reads
the store's `history` table: stored text per event, one event of each kind, and (where SQLite has
dbstat) the pages of the table and its index.

    python3 bench/history_bytes.py target/release/punctual
"""
import json, subprocess, sys, time, urllib.request, sqlite3, os, tempfile, socket
BIN = sys.argv[1]
d = tempfile.mkdtemp()
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
p = subprocess.Popen([BIN, "serve", "--data", d, "--listen", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{port}"
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        t = r.read(); return json.loads(t) if t else None
for _ in range(100):
    try: call("GET", "/healthz"); break
    except Exception: time.sleep(0.1)
N = 5000
for i in range(0, N, 500):
    call("POST", "/v1/queues/order.cancel/tasks", {"tasks": [{"key": f"order-{j:07d}", "payload": {"order": j}} for j in range(i, i + 500)]})
done = 0
while done < N:
    leases = call("POST", "/v1/queues/order.cancel/lease", {"max": 500, "wait": "0s"})["leases"]
    if not leases: break
    call("POST", "/v1/acks", {"acks": [{"lease_id": l["lease_id"], "outcome": "done"} for l in leases]})
    done += len(leases)
p.terminate(); p.wait()
db = sqlite3.connect(os.path.join(d, "punctual.db"))
rows, events, text = db.execute("SELECT count(*), sum(count), sum(length(events)) FROM history").fetchone()
print(f"keys {rows}, events {events}, stored text {text} bytes: {text/events:.1f} B per event")
for kind in ["created", "leased", "acked"]:
    sample = db.execute("SELECT events FROM history LIMIT 1").fetchone()[0].split("\n")
    line = [l for l in sample if f'"e":"{kind}"' in l][0]
    print(kind, len(line), line)
try:
    pages = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name IN ('history', 'history_by_latest')").fetchone()[0]
    print(f"history table and index: {pages} bytes on disk, {pages/events:.1f} B per event")
except Exception as e:
    print("dbstat unavailable:", e)
