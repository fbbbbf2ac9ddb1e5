# Redis CPU per task over HTTP, as issue P measures it: a private redis-server, one
# `punctual serve` on it with the queue `q` in SHARDS shards, a producer posting N
# due-now tasks in batches of 1,000, then 8 pull loops leasing 100 at a time and
# acknowledging each answer with one POST /v1/acks. Redis CPU (INFO cpu) per task for
# each phase, and each phase's rate. One JSON line; with STATS=1, each phase's
# INFO commandstats too.
#
#   python3 bench/redis_cpu_per_task.py target/release/punctual 16 50000
import http.client, json, os, socket, subprocess, sys, tempfile, threading, time

BIN, SHARDS, N = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

d = tempfile.mkdtemp()
rport = free_port()
redis = subprocess.Popen(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no", "--dir", d],
                         stdout=subprocess.DEVNULL)
time.sleep(0.3)
def rcli(*a):
    return subprocess.run(["redis-cli", "-p", str(rport), *a], capture_output=True, text=True).stdout
def cpu():
    info = rcli("INFO", "cpu")
    v = dict(l.split(":") for l in info.splitlines() if ":" in l)
    return float(v["used_cpu_sys"]) + float(v["used_cpu_user"])
hport = free_port()
cfg = os.path.join(d, "p.toml")
open(cfg, "w").write(f'[queues."q"]\nshards = {SHARDS}\n')
srv = subprocess.Popen([BIN, "serve", "--store", f"redis://127.0.0.1:{rport}", "--listen", f"127.0.0.1:{hport}",
                        "--config", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(100):
    try:
        c = http.client.HTTPConnection("127.0.0.1", hport); c.request("GET", "/healthz"); c.getresponse().read(); break
    except Exception:
        time.sleep(0.1)

def post(conn, path, body):
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    r = conn.getresponse(); data = r.read()
    assert r.status < 300, (r.status, data)
    return json.loads(data) if data else None

rcli("CONFIG", "RESETSTAT")
c0 = cpu(); t0 = time.time()
conn = http.client.HTTPConnection("127.0.0.1", hport)
for b in range(N // 1000):
    post(conn, "/v1/queues/q/tasks", {"tasks": [{"key": f"k{b}-{i}", "delay": 0, "payload": {"n": i}} for i in range(1000)]})
c1 = cpu(); t1 = time.time()
sched_stats = rcli("INFO", "commandstats")
rcli("CONFIG", "RESETSTAT")
done = [0]; lock = threading.Lock()
def loop():
    conn = http.client.HTTPConnection("127.0.0.1", hport)
    while True:
        with lock:
            if done[0] >= N: return
        got = post(conn, "/v1/queues/q/lease", {"max": 100, "wait": "1s"})["leases"]
        if not got:
            continue
        res = post(conn, "/v1/acks", {"acks": [{"lease_id": l["lease_id"], "outcome": "done"} for l in got]})["results"]
        assert all(r["status"] == 204 for r in res), res[:3]
        with lock:
            done[0] += len(got)
c2 = cpu(); t2 = time.time()
ts = [threading.Thread(target=loop) for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
c3 = cpu(); t3 = time.time()
la_stats = rcli("INFO", "commandstats")
srv.terminate(); srv.wait(); redis.terminate(); redis.wait()
s_us = (c1 - c0) / N * 1e6; la_us = (c3 - c2) / N * 1e6
print(json.dumps({"bin": BIN, "shards": SHARDS, "tasks": N, "schedule_us": round(s_us, 2), "lease_ack_us": round(la_us, 2),
                  "together_us": round(s_us + la_us, 2), "schedule_per_s": round(N / (t1 - t0)), "lease_ack_per_s": round(N / (t3 - t2))}))
if os.environ.get("STATS"):
    print("--- schedule"); print("\n".join(l for l in sched_stats.splitlines() if l.startswith("cmdstat")))
    print("--- lease+ack"); print("\n".join(l for l in la_stats.splitlines() if l.startswith("cmdstat")))
