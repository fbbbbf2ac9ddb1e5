"""The outbox helpers against the real databases: PostgreSQL (psycopg 3) and MySQL/MariaDB
(PyMySQL).

Each run creates a database of its own on each server (``punctual_py_<random>``), creates
the outbox tables by running the repository's DDL (crates/punctual-outbox/sql), and
drops the database at the end. The servers come from ``$PUNCTUAL_TEST_POSTGRES_URL``
(default ``postgres://postgres@127.0.0.1:5432/postgres``) and ``$PUNCTUAL_TEST_MYSQL_URL``
(default ``mysql://punctual:punctual@127.0.0.1:3306``); one that does not answer fails
the tests (``bash .ci/run services`` starts both), it never skips them.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

import httpx
import pymysql
import psycopg
import pytest

import punctual
from punctual import outbox
from punctual.types import task_body

REPO = Path(__file__).resolve().parents[3]
SQL_DIR = REPO / "crates" / "punctual-outbox" / "sql"
POSTGRES_URL = os.environ.get("PUNCTUAL_TEST_POSTGRES_URL") or "postgres://postgres@127.0.0.1:5432/postgres"
MYSQL_URL = os.environ.get("PUNCTUAL_TEST_MYSQL_URL") or "mysql://punctual:punctual@127.0.0.1:3306"
START_THEM = "start it with `bash .ci/run services`, or point {var} at one that runs"

Row = Tuple[str, str, str, Optional[Dict[str, Any]]]


def ddl_statements(path: Path, table: str) -> List[str]:
    """The statements of a DDL file with every ``punctual_outbox`` renamed ``table`` (as
    ``punctual outbox init --table`` does), split on the ``;`` outside ``$$`` bodies."""
    text = path.read_text().replace("punctual_outbox", table)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    statements: List[str] = []
    current: List[str] = []
    in_body = False
    for part in re.split(r"(\$\$|;)", code):
        if part == ";" and not in_body:
            statements.append("".join(current).strip())
            current = []
            continue
        if part == "$$":
            in_body = not in_body
        current.append(part)
    statements.append("".join(current).strip())
    return [s for s in statements if s]


class Database:
    """A database of this run's own on one server; ``connect()`` opens a connection to it
    (closed at the end), ``rows`` reads a table's committed rows of a queue."""

    dialect: outbox.Dialect

    def __init__(self) -> None:
        self.name = f"punctual_py_{uuid.uuid4().hex[:12]}"
        self._opened: List[Any] = []

    def _connect(self) -> Any:
        raise NotImplementedError

    def _drop(self) -> None:
        raise NotImplementedError

    def connect(self) -> Any:
        conn = self._connect()
        self._opened.append(conn)
        return conn

    def create_outbox(self, table: str = outbox.DEFAULT_TABLE) -> None:
        conn = self.connect()
        with conn.cursor() as cur:
            for statement in ddl_statements(SQL_DIR / f"{self.dialect}.sql", table):
                cur.execute(statement)
        conn.commit()

    def rows(self, queue: str, table: str = outbox.DEFAULT_TABLE) -> List[Row]:
        """The rows of ``queue`` as another session sees them (committed only), by id."""
        conn = self.connect()
        key = "key" if self.dialect == "postgres" else "`key`"
        with conn.cursor() as cur:
            cur.execute(f"SELECT queue, {key}, op, body FROM {table} WHERE queue = %s ORDER BY id", (queue,))
            found = [
                (q, k, op, json.loads(body) if isinstance(body, (str, bytes)) else body)
                for q, k, op, body in cur.fetchall()
            ]
        conn.commit()
        return found

    def close(self) -> None:
        for conn in self._opened:
            conn.close()
        self._drop()


class Postgres(Database):
    dialect = "postgres"

    def __init__(self) -> None:
        super().__init__()
        try:
            self._admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)
        except psycopg.OperationalError as exc:
            pytest.fail(f"PostgreSQL at {POSTGRES_URL} does not answer ({exc}): "
                        + START_THEM.format(var="PUNCTUAL_TEST_POSTGRES_URL"))
        self._admin.execute(f"CREATE DATABASE {self.name}")

    def _connect(self) -> Any:
        return psycopg.connect(POSTGRES_URL, dbname=self.name, connect_timeout=5)

    def _drop(self) -> None:
        self._admin.execute(f"DROP DATABASE IF EXISTS {self.name}")
        self._admin.close()


class MySQL(Database):
    dialect = "mysql"

    def __init__(self) -> None:
        super().__init__()
        url = urlsplit(MYSQL_URL)
        self._params: Dict[str, Any] = dict(
            host=url.hostname or "127.0.0.1", port=url.port or 3306,
            user=unquote(url.username or "root"), password=unquote(url.password or ""),
            connect_timeout=5, charset="utf8mb4",
        )
        try:
            self._admin = pymysql.connect(**self._params, autocommit=True)
        except pymysql.err.OperationalError as exc:
            pytest.fail(f"MySQL/MariaDB at {MYSQL_URL} does not answer ({exc}): "
                        + START_THEM.format(var="PUNCTUAL_TEST_MYSQL_URL"))
        with self._admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {self.name} CHARACTER SET utf8mb4")

    def _connect(self) -> Any:
        return pymysql.connect(**self._params, database=self.name)

    def _drop(self) -> None:
        with self._admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {self.name}")
        self._admin.close()


@pytest.fixture(scope="session", params=["postgres", "mysql"])
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    database: Database = Postgres() if request.param == "postgres" else MySQL()
    try:
        database.create_outbox()
        yield database
    finally:
        database.close()


@pytest.fixture
def queue(request: pytest.FixtureRequest) -> str:
    return f"py.outbox.{request.node.name[:40]}.{uuid.uuid4().hex[:8]}"


# One schedule with every field of the API, and the body it must be, written out by hand:
# a builder that drops or renames a field fails the literal comparison.
RICH: Dict[str, Any] = dict(
    payload={"order_id": 1234, "note": "café ☕", "items": [1, 2]},
    due_at=dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
    repeat=punctual.Repeat(cron="0 9 * * MON-FRI", tz="Asia/Shanghai", times=3, cron_syntax="vixie"),
    tags=["order-1234", "merchant-42"],
    max_attempts=5,
    backoff=punctual.Backoff(initial="2s", factor=3, max="1m"),
    if_exists="replace",
    target=punctual.Target(url="https://shop.example/hooks/cancel", method="POST",
                           headers={"x-shop": "1"}, timeout=5),
    priority=7,
    debounce=dt.timedelta(minutes=5),
    group="merchant-42",
    unique_for=punctual.UniqueFor("1h", dead=True),
    calendar="cn-office",
    align="next_open",
    misfire="fire_all",
    catch_up_max=3,
    overlap="queue",
    jitter=30,
)
RICH_BODY: Dict[str, Any] = {
    "due_at": "2030-01-02T03:04:05+00:00",
    "payload": {"order_id": 1234, "note": "café ☕", "items": [1, 2]},
    "repeat": {"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai", "times": 3, "cron_syntax": "vixie"},
    "tags": ["order-1234", "merchant-42"],
    "max_attempts": 5,
    "backoff": {"initial": "2s", "factor": 3.0, "max": "1m"},
    "if_exists": "replace",
    "target": {"url": "https://shop.example/hooks/cancel", "method": "POST",
               "headers": {"x-shop": "1"}, "timeout": 5000},
    "priority": 7,
    "debounce": {"max_wait": 300000},
    "group": "merchant-42",
    "unique_for": {"window": "1h", "dead": True},
    "calendar": "cn-office",
    "align": "next_open",
    "misfire": "fire_all",
    "catch_up_max": 3,
    "overlap": "queue",
    "jitter": 30000,
}


def body_the_client_sends(queue: str, key: str, **fields: Any) -> Dict[str, Any]:
    """The JSON body ``Client.schedule`` PUTs for these arguments (over a fake transport)."""
    sent: List[Dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.method == "PUT"
        assert request.url.path == f"/v1/queues/{queue}/tasks/{key}"
        sent.append(json.loads(request.content))
        return httpx.Response(200, json={"outcome": "created", "task": None})

    with punctual.Client("http://punctual.test", transport=httpx.MockTransport(answer)) as client:
        client.schedule(queue, key, **fields)
    assert len(sent) == 1
    return sent[0]


def test_schedule_committed_is_one_row_with_the_clients_body(db: Database, queue: str) -> None:
    conn = db.connect()
    with conn.cursor() as cur:
        row_id = outbox.schedule(cur, queue, "order-1234", **RICH)
    assert isinstance(row_id, int) and row_id > 0
    assert db.rows(queue) == [], "the helper does not commit: nothing is visible before the caller commits"
    conn.commit()

    rows = db.rows(queue)
    assert len(rows) == 1
    row_queue, row_key, op, body = rows[0]
    assert (row_queue, row_key, op) == (queue, "order-1234", "schedule")
    assert body == RICH_BODY
    assert body == task_body(**RICH)
    assert body == body_the_client_sends(queue, "order-1234", **RICH)


def test_schedule_of_a_few_fields_and_an_outbox_object(db: Database, queue: str) -> None:
    conn = db.connect()
    box = outbox.Outbox()  # the dialect detected from the cursor, the default table
    with conn.cursor() as cur:
        first = box.schedule(cur, queue, "order-1", delay="30m", payload={"order_id": 1})
        second = box.schedule(cur, queue, "order-2", delay=dt.timedelta(seconds=90), misfire="skip",
                              misfire_after="2h")
        third = outbox.schedule(cur, queue, "order-3")
    conn.commit()
    assert first is not None and second is not None and third is not None
    assert first < second < third
    assert db.rows(queue) == [
        (queue, "order-1", "schedule", {"delay": "30m", "payload": {"order_id": 1}}),
        (queue, "order-2", "schedule", {"delay": 90000, "misfire": "skip", "misfire_after": "2h"}),
        (queue, "order-3", "schedule", {}),
    ]


def test_schedule_rolled_back_leaves_no_row(db: Database, queue: str) -> None:
    conn = db.connect()
    with conn.cursor() as cur:
        outbox.schedule(cur, queue, "order-1234", delay="30m", payload={"order_id": 1234})
        outbox.cancel(cur, queue, "order-1")
    conn.rollback()
    assert db.rows(queue) == []


def test_cancel_and_cancel_tag_rows(db: Database, queue: str) -> None:
    conn = db.connect()
    with conn.cursor() as cur:
        outbox.cancel(cur, queue, "order-1234")
        outbox.cancel_tag(cur, queue, "merchant-42")
        outbox.Outbox().cancel_tag(cur, queue, "flow/9")
    conn.commit()
    assert db.rows(queue) == [
        (queue, "order-1234", "cancel", None),
        (queue, "merchant-42", "cancel_tag", None),
        (queue, "flow/9", "cancel_tag", None),
    ]


def test_a_table_of_another_name(db: Database, queue: str) -> None:
    table = f"shop_outbox_{uuid.uuid4().hex[:6]}"
    db.create_outbox(table)
    conn = db.connect()
    shop = outbox.Outbox(table=table)
    with conn.cursor() as cur:
        shop.schedule(cur, queue, "order-1", delay="30m")
        shop.cancel(cur, queue, "order-2")
        outbox.cancel_tag(cur, queue, "flow-9", table=table)
        outbox.Outbox(table="nowhere").cancel(cur, queue, "order-3", table=table)  # the call's wins
    conn.commit()
    assert db.rows(queue, table) == [
        (queue, "order-1", "schedule", {"delay": "30m"}),
        (queue, "order-2", "cancel", None),
        (queue, "flow-9", "cancel_tag", None),
        (queue, "order-3", "cancel", None),
    ]
    assert db.rows(queue) == [], "nothing in the default table"


BAD_TABLE_NAMES = [
    "", "punctual outbox", "punctual_outbox; DROP TABLE orders", "punctual-outbox", "1outbox",
    "a.b.c", "app.", ".outbox", '"punctual_outbox"', "`punctual_outbox`", "outbox--", "tåble",
]


@pytest.mark.parametrize("name", BAD_TABLE_NAMES)
def test_a_bad_table_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="outbox table name"):
        outbox.Outbox(table=name)
    with pytest.raises(ValueError, match="outbox table name"):
        outbox.check_table_name(name)


def test_table_names_that_are_identifiers_are_taken() -> None:
    for name in ["punctual_outbox", "shop.outbox", "_x9", "Shop_Outbox2.T"]:
        assert outbox.Outbox(table=name).table == name


def test_a_bad_table_name_writes_no_row(db: Database, queue: str) -> None:
    conn = db.connect()
    with conn.cursor() as cur:
        for name in BAD_TABLE_NAMES:
            with pytest.raises(ValueError, match="outbox table name"):
                outbox.schedule(cur, queue, "order-1", delay="30m", table=name)
            with pytest.raises(ValueError, match="outbox table name"):
                outbox.cancel(cur, queue, "order-1", table=name)
            with pytest.raises(ValueError, match="outbox table name"):
                outbox.cancel_tag(cur, queue, "tag", table=name)
        outbox.cancel(cur, queue, "still-usable")
    conn.commit()
    assert db.rows(queue) == [(queue, "still-usable", "cancel", None)], (
        "the refused calls wrote nothing, and the transaction went on"
    )


REFUSED: List[Tuple[str, Callable[[Any, str], Any], type]] = [
    ("delay and due_at",
     lambda cur, q: outbox.schedule(cur, q, "k", delay="1m", due_at="2030-01-01T00:00:00Z"), ValueError),
    ("if_exists", lambda cur, q: outbox.schedule(cur, q, "k", if_exists="sometimes"), ValueError),
    ("priority not an int", lambda cur, q: outbox.schedule(cur, q, "k", priority="high"), TypeError),  # type: ignore[arg-type]
    ("group not a str", lambda cur, q: outbox.schedule(cur, q, "k", group=42), TypeError),  # type: ignore[arg-type]
    ("align", lambda cur, q: outbox.schedule(cur, q, "k", align="later"), ValueError),
    ("a negative delay", lambda cur, q: outbox.schedule(cur, q, "k", delay=-1), ValueError),
    ("a naive due_at", lambda cur, q: outbox.schedule(cur, q, "k", due_at=dt.datetime(2030, 1, 1)), ValueError),
    ("catch_up_max not an int", lambda cur, q: outbox.schedule(cur, q, "k", catch_up_max=2.5), TypeError),  # type: ignore[arg-type]
    ("an empty key", lambda cur, q: outbox.schedule(cur, q, "", delay="1m"), ValueError),
    ("an empty queue", lambda cur, q: outbox.schedule(cur, "", "k", delay="1m"), ValueError),
    ("a key not a str", lambda cur, q: outbox.cancel(cur, q, 42), TypeError),  # type: ignore[arg-type]
    ("an empty cancelled key", lambda cur, q: outbox.cancel(cur, q, ""), ValueError),
    ("an empty tag", lambda cur, q: outbox.cancel_tag(cur, q, ""), ValueError),
    ("an unknown dialect", lambda cur, q: outbox.cancel(cur, q, "k", dialect="sqlite"), ValueError),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("call,error", [(call, error) for _, call, error in REFUSED],
                         ids=[what for what, _, _ in REFUSED])
def test_a_call_refused_by_local_validation_writes_no_row(
    db: Database, queue: str, call: Callable[[Any, str], Any], error: type
) -> None:
    conn = db.connect()
    with conn.cursor() as cur:
        with pytest.raises(error):
            call(cur, queue)
        outbox.cancel(cur, queue, "still-usable")
    conn.commit()
    assert db.rows(queue) == [(queue, "still-usable", "cancel", None)]
    assert db.rows("") == [], "nothing with an empty queue"


def test_the_dialect_is_read_from_the_driver_or_given(db: Database, queue: str) -> None:
    conn = db.connect()
    with conn.cursor() as cur:
        assert outbox.detect_dialect(cur) == db.dialect
        outbox.cancel(cur, queue, "given", dialect=db.dialect)
        outbox.Outbox(dialect=db.dialect).cancel(cur, queue, "fixed")
    conn.commit()
    assert [key for _, key, _, _ in db.rows(queue)] == ["given", "fixed"]


def test_an_unknown_driver_needs_the_dialect() -> None:
    class Cursor:
        def __init__(self) -> None:
            self.executed: List[Tuple[str, Any]] = []
            self.lastrowid = 7

        def execute(self, sql: str, params: Any = None) -> None:
            self.executed.append((sql, params))

    cur = Cursor()
    with pytest.raises(ValueError, match="dialect='postgres' or dialect='mysql'"):
        outbox.cancel(cur, "q", "k")
    assert cur.executed == []
    assert outbox.schedule(cur, "q", "k", delay="1m", dialect="mysql") == 7
    assert cur.executed == [(
        "INSERT INTO punctual_outbox (queue, `key`, op, body) VALUES (%s, %s, %s, %s)",
        ["q", "k", "schedule", '{"delay": "1m"}'],
    )]


INSERT = "INSERT INTO punctual_outbox (queue, key, op, body) VALUES "


@pytest.mark.parametrize("paramstyle,sql,params", [
    ("qmark", INSERT + "(?, ?, ?, CAST(? AS jsonb)) RETURNING id", ["q", "k", "schedule", '{"delay": "1m"}']),
    ("numeric", INSERT + "(:1, :2, :3, CAST(:4 AS jsonb)) RETURNING id", ["q", "k", "schedule", '{"delay": "1m"}']),
    ("named", INSERT + "(:p1, :p2, :p3, CAST(:p4 AS jsonb)) RETURNING id",
     {"p1": "q", "p2": "k", "p3": "schedule", "p4": '{"delay": "1m"}'}),
])
def test_placeholders_follow_the_drivers_paramstyle(
    monkeypatch: pytest.MonkeyPatch, paramstyle: str, sql: str, params: Any
) -> None:
    driver = type(sys)("fake_pg_driver")
    driver.paramstyle = paramstyle  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_pg_driver", driver)

    class Cursor:
        executed: List[Tuple[str, Any]] = []

        def execute(self, sql: str, params: Any = None) -> None:
            self.executed.append((sql, params))

        def fetchone(self) -> Dict[str, int]:
            return {"id": 12}

    Cursor.__module__ = "fake_pg_driver"
    cur = Cursor()
    assert outbox.schedule(cur, "q", "k", delay="1m", dialect="postgres") == 12
    assert cur.executed == [(sql, params)]
