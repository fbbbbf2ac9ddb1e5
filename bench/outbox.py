# The outbox's figures, as issue T states its goals, against the machine's PostgreSQL
# or MariaDB (a database of its own, dropped after) and one `punctual serve` on the
# embedded store draining it:
# - drain rate: ROWS schedule rows committed in transactions of 1,000 while no server
#   runs, then the server started: rows applied per second until the table is empty,
#   beside the same tasks scheduled over HTTP in batches of 500 (the API's way);
# - commit to task stored: PROBES rows, each committed alone while the server idles;
#   for each, the task's `created_at` (the server's clock, the same machine's) minus
#   the instant the commit returned.
# One JSON line. Python packages: psycopg 3 and PyMySQL (the Python client's test
# venv has both: clients/python/run-tests makes it).
#
#   clients/python/.venv/bin/python bench/outbox.py target/release/punctual postgres 100000 200
import datetime, http.client, json, os, socket, statistics, subprocess, sys, tempfile, time, uuid

BIN, DIALECT, ROWS, PROBES = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
BATCH = int(sys.argv[5]) if len(sys.argv) > 5 else 500
QUEUE = "order.cancel"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def connect(database):
    if DIALECT == "postgres":
        import psycopg
        return psycopg.connect(f"host=127.0.0.1 user=postgres dbname={database}", autocommit=True)
    import pymysql
    return pymysql.connect(host="127.0.0.1", user="punctual", password="punctual", database=database, autocommit=True)


def url(database):
    if DIALECT == "postgres":
        return f"postgres://postgres@127.0.0.1:5432/{database}"
    return f"mysql://punctual:punctual@127.0.0.1:3306/{database}"


def insert_sql():
    key = "`key`" if DIALECT == "mysql" else "key"
    body = "CAST(%s AS jsonb)" if DIALECT == "postgres" else "%s"
    return f"INSERT INTO punctual_outbox (queue, {key}, op, body) VALUES (%s, %s, 'schedule', {body})"


def call(conn, method, path, body=None):
    conn.request(method, path, json.dumps(body) if body is not None else None, {"content-type": "application/json"})
    answer = conn.getresponse()
    text = answer.read()
    return answer.status, (json.loads(text) if text else None)


def serve(extra_config, data):
    port = free_port()
    config = os.path.join(data, "punctual.toml")
    with open(config, "w") as f:
        f.write(extra_config)
    server = subprocess.Popen([BIN, "serve", "--data", os.path.join(data, "store"), "--listen",
                               f"127.0.0.1:{port}", "--config", config],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            if call(http.client.HTTPConnection("127.0.0.1", port), "GET", "/healthz")[0] == 200:
                return server, port
        except (ConnectionError, OSError):
            time.sleep(0.05)
    raise SystemExit("the server did not start")


def waiting(db):
    with db.cursor() as cur:
        cur.execute("SELECT count(*) FROM punctual_outbox")
        return cur.fetchone()[0]


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    database = "punctual_bench_" + uuid.uuid4().hex[:12]
    admin = connect("postgres" if DIALECT == "postgres" else "mysql")
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {database}")
    try:
        subprocess.run([BIN, "outbox", "init", "--url", url(database)], check=True, stdout=subprocess.DEVNULL)
        db = connect(database)
        body = json.dumps({"delay": "1h", "payload": {"order_id": 1}})
        db.autocommit = False
        with db.cursor() as cur:
            for start in range(0, ROWS, 1000):
                cur.executemany(insert_sql(), [(QUEUE, f"order-{n}", body) for n in range(start, min(ROWS, start + 1000))])
                db.commit()
        db.autocommit = True
        data = tempfile.mkdtemp()
        config = f'[[outbox]]\nurl = "{url(database)}"\nbatch = {BATCH}\n'
        server, port = serve(config, data)
        began = time.monotonic()
        while waiting(db) > 0:
            time.sleep(0.02)
        drained_s = time.monotonic() - began
        api = http.client.HTTPConnection("127.0.0.1", port)
        status, stats = call(api, "GET", f"/v1/queues/{QUEUE}")
        stored = stats["scheduled"] if status == 200 else None

        latencies = []
        for n in range(PROBES):
            key = f"probe-{n}"
            with db.cursor() as cur:
                db.autocommit = False
                cur.execute(insert_sql(), (QUEUE, key, body))
                db.commit()
                committed_ms = time.time() * 1000
                db.autocommit = True
            while True:
                status, task = call(api, "GET", f"/v1/queues/{QUEUE}/tasks/{key}")
                if status == 200:
                    break
                time.sleep(0.0005)
            created_ms = datetime.datetime.fromisoformat(task["created_at"].replace("Z", "+00:00")).timestamp() * 1000
            latencies.append(max(0.0, created_ms - committed_ms))
            time.sleep(0.01)
        server.terminate()
        server.wait()

        # The same tasks over HTTP, batches of 500, on a fresh store: the API's rate.
        http_data = tempfile.mkdtemp()
        server, port = serve("", http_data)
        api = http.client.HTTPConnection("127.0.0.1", port)
        began = time.monotonic()
        for start in range(0, ROWS, 500):
            tasks = [{"key": f"order-{n}", "delay": "1h", "payload": {"order_id": 1}}
                     for n in range(start, min(ROWS, start + 500))]
            status, _ = call(api, "POST", f"/v1/queues/{QUEUE}/tasks", {"tasks": tasks})
            assert status == 200, status
        http_s = time.monotonic() - began
        server.terminate()
        server.wait()
        print(json.dumps({
            "dialect": DIALECT, "rows": ROWS, "stored": stored,
            "drain_rows_per_s": round(ROWS / drained_s), "drain_s": round(drained_s, 2),
            "http_batch_tasks_per_s": round(ROWS / http_s),
            "commit_to_stored_ms": {"p50": round(statistics.median(latencies), 1), "p99": round(pct(latencies, 99), 1),
                                    "max": round(max(latencies), 1), "probes": PROBES},
        }))
    finally:
        force = " WITH (FORCE)" if DIALECT == "postgres" else ""
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {database}{force}")


main()
