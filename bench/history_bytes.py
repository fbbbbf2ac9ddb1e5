"""Bytes per history event: starts `punctual serve` (the binary given) on a fresh data directory,
schedules 5,000 tasks in batches, leases and acks them over HTTP, then reads what the store keeps
of them: each done task's row kept as its history (state -1), its stored text per event, one event
of each kind, and (where SQLite has dbstat) the pages of the tables and indexes that hold them. With `redis`, the server runs on a `redis-server` of its own instead, and
the script reads the history hash and what Redis' `used_memory` grew by (every task is done, so
the histories are all that is left of them).

    python3 bench/history_bytes.py target/release/punctual [redis]
"""
import json, subprocess, sys, time, urllib.request, sqlite3, os, tempfile, socket
BIN = sys.argv[1]
d = tempfile.mkdtemp()
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close(); return port
REDIS = len(sys.argv) > 2 and sys.argv[2] == "redis"
if REDIS:
    rport = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no", "--dir", d],
                             stdout=subprocess.DEVNULL)
    def cli(*args):
        return subprocess.run(["redis-cli", "-p", str(rport), *args], capture_output=True, text=True).stdout
    for _ in range(100):
        if cli("PING").strip() == "PONG": break
        time.sleep(0.1)
    store = ["--store", f"redis://127.0.0.1:{rport}"]
    def used_memory():
        return int([l for l in cli("INFO", "memory").splitlines() if l.startswith("used_memory:")][0].split(":")[1])
else:
    store = ["--data", d]
p = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", *store], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{port}"
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        t = r.read(); return json.loads(t) if t else None
for _ in range(100):
    try: call("GET", "/healthz"); break
    except Exception: time.sleep(0.1)
N = 5000
if REDIS:
    call("PUT", "/v1/queues/order.cancel/tasks/warm-up", {"delay": "1h"})
    call("DELETE", "/v1/queues/order.cancel/tasks/warm-up")
    cli("HDEL", "punctual:{order.cancel}:history", "warm-up"); cli("ZREM", "punctual:{order.cancel}:history:latest", "warm-up")
    memory_before = used_memory()
for i in range(0, N, 500):
    call("POST", "/v1/queues/order.cancel/tasks", {"tasks": [{"key": f"order-{j:07d}", "payload": {"order": j}} for j in range(i, i + 500)]})
done = 0
while done < N:
    leases = call("POST", "/v1/queues/order.cancel/lease", {"max": 500, "wait": "0s"})["leases"]
    if not leases: break
    call("POST", "/v1/acks", {"acks": [{"lease_id": l["lease_id"], "outcome": "done"} for l in leases]})
    done += len(leases)
if REDIS:
    grown = used_memory() - memory_before
    p.terminate(); p.wait()
    lines = cli("--no-raw", "HVALS", "punctual:{order.cancel}:history")
    values = [json.loads(l.split(") ", 1)[1]) for l in lines.splitlines() if ") " in l]
    events = [e for v in values for e in v.split("\n")[1:]]
    text = sum(len(v) for v in values)
    print(f"keys {len(values)}, events {len(events)}, stored text {text} bytes: {text/len(events):.1f} B per event")
    for kind in ["created", "leased", "acked"]:
        line = [l for l in values[0].split("\n")[1:] if f'"e":"{kind}"' in l][0]
        print(kind, len(line), line)
    print(f"used_memory grew {grown} bytes: {grown/len(values):.0f} B per done task, {grown/len(events):.1f} B per event")
    redis.terminate(); redis.wait()
    sys.exit(0)
p.terminate(); p.wait()
db = sqlite3.connect(os.path.join(d, "punctual.db"))
# Every task is done: each done task's row is kept as its key's history (state -1, its
# events in `pending_events`); a key's events go to the table `history` only when they
# move (not here).
rows, events, text = db.execute(
    "SELECT count(*), sum(pending_count), sum(length(pending_events)) FROM tasks WHERE state = -1").fetchone()
moved = db.execute("SELECT count(*) FROM history").fetchone()[0]
print(f"keys {rows} (kept rows; {moved} in the table history), events {events}, stored text {text} bytes: "
      f"{text/events:.1f} B per event")
sample = db.execute("SELECT pending_events FROM tasks WHERE state = -1 LIMIT 1").fetchone()[0].split("\n")
for kind in ["created", "leased", "acked"]:
    line = [l for l in sample if f'"e":"{kind}"' in l][0]
    print(kind, len(line), line)
try:
    names = ["tasks", "tasks_by_key", "tasks_by_due", "tasks_urgent", "tasks_by_expiry", "tasks_dead_by_death",
             "tasks_by_group", "history", "history_looked"]
    marks = ",".join("?" * len(names))
    pages = db.execute(f"SELECT sum(pgsize) FROM dbstat WHERE name IN ({marks})", names).fetchone()[0]
    print(f"tasks and history tables and their indexes, holding only done tasks' histories: {pages} bytes on disk, "
          f"{pages/events:.1f} B per event")
except Exception as e:
    print("dbstat unavailable:", e)
