"""The outbox: a schedule or a cancel written as a row of the application's own database,
inside the application's own transaction (docs/outbox.md).

    import punctual.outbox as outbox

    with conn.transaction():                       # psycopg 3; PyMySQL: conn.commit()
        cur.execute("INSERT INTO orders (id, total) VALUES (%s, %s)", (1234, 99))
        outbox.schedule(cur, "order.cancel", "order-1234", delay="30m", payload={"order_id": 1234})

Each helper INSERTs one row through the cursor it is given and does nothing else: it
never commits, never rolls back and never opens a connection. punctual's server applies
the committed rows as the requests they stand for; a rolled-back transaction leaves no
row, so no task.

The row's ``body`` is exactly the JSON body ``Client.schedule`` sends for the same
arguments (both are built by ``types.task_body``), and it is checked the same way before
anything is written: a refused call raises and writes no row.

The SQL dialect is read from the cursor's driver: psycopg (3), psycopg2 and pg8000 are
PostgreSQL; PyMySQL, mysqlclient (``MySQLdb``), mysql-connector and MariaDB Connector/
Python are MySQL/MariaDB. For another driver pass ``dialect="postgres"`` or
``dialect="mysql"``. The placeholders follow the driver's ``paramstyle``.
"""
from __future__ import annotations

import inspect
import json
import re
import sys
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from .types import (
    Align,
    Backoff,
    Duration,
    IfExists,
    Json,
    Misfire,
    Overlap,
    Repeat,
    Target,
    Time,
    UniqueFor,
    task_body,
)

Dialect = Literal["postgres", "mysql"]

#: The table ``punctual outbox init`` creates.
DEFAULT_TABLE = "punctual_outbox"

_DIALECTS: Tuple[str, ...] = ("postgres", "mysql")

# The top-level package of a DB-API driver, by the dialect it speaks.
_DRIVER_DIALECTS: Dict[str, Dialect] = {
    "psycopg": "postgres",
    "psycopg2": "postgres",
    "pg8000": "postgres",
    "pymysql": "mysql",
    "MySQLdb": "mysql",
    "mysql": "mysql",
    "mariadb": "mysql",
}

# An identifier, optionally qualified by its schema (PostgreSQL) or database (MySQL):
# nothing that would need quoting, so the name can stand in the SQL text as it is.
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")


def check_table_name(table: str) -> str:
    """``table`` if it is a plain identifier (letters, digits, ``_``, not starting with a
    digit), optionally ``schema.``-qualified; else ``ValueError``."""
    if not isinstance(table, str) or not _TABLE_NAME.fullmatch(table):
        raise ValueError(
            f"outbox table name {table!r}: expected letters, digits and _ (not starting with a "
            "digit), optionally qualified as schema.table"
        )
    return table


def _require_text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    return value


def _driver_modules(cursor: Any) -> List[str]:
    """The modules of the cursor's class and of its bases (a driver's cursor subclassed
    by the application still names its driver)."""
    return [cls.__module__ for cls in type(cursor).__mro__ if cls.__module__ != "builtins"]


def detect_dialect(cursor: Any) -> Dialect:
    """``"postgres"`` or ``"mysql"``, from the driver the cursor comes from; ``ValueError``
    for a driver this module does not know (then pass ``dialect=``)."""
    for module in _driver_modules(cursor):
        dialect = _DRIVER_DIALECTS.get(module.split(".")[0])
        if dialect is not None:
            return dialect
    raise ValueError(
        f"cannot tell the SQL dialect of a {type(cursor).__module__}.{type(cursor).__name__}: "
        "pass dialect='postgres' or dialect='mysql'"
    )


def _paramstyle(cursor: Any) -> str:
    """The DB-API ``paramstyle`` of the cursor's driver (``format`` when it has none)."""
    for module in _driver_modules(cursor):
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):
            style = getattr(sys.modules.get(".".join(parts[:depth])), "paramstyle", None)
            if isinstance(style, str):
                return style
    return "format"


def _placeholders(paramstyle: str, values: Sequence[Any]) -> Tuple[List[str], Union[Sequence[Any], Dict[str, Any]]]:
    """One placeholder per value in the driver's style, and the parameters to pass."""
    if paramstyle in ("format", "pyformat"):
        return ["%s"] * len(values), list(values)
    if paramstyle == "qmark":
        return ["?"] * len(values), list(values)
    if paramstyle == "numeric":
        return [f":{i + 1}" for i in range(len(values))], list(values)
    if paramstyle == "named":
        names = [f"p{i + 1}" for i in range(len(values))]
        return [f":{name}" for name in names], dict(zip(names, values))
    raise ValueError(f"unsupported DB-API paramstyle {paramstyle!r}")


class Outbox:
    """The outbox helpers for one table (default ``punctual_outbox``) and, optionally, a
    fixed dialect; every method also takes ``table=`` and ``dialect=`` for one call.

    Each method INSERTs one row through ``cursor`` (any DB-API cursor of the caller's
    own connection, inside the caller's transaction) and returns the new row's ``id``
    (``RETURNING id`` on PostgreSQL, ``cursor.lastrowid`` on MySQL/MariaDB; None when
    the driver gives none). Committing or rolling back is the caller's.
    """

    def __init__(self, table: str = DEFAULT_TABLE, dialect: Optional[Dialect] = None) -> None:
        self.table = check_table_name(table)
        if dialect is not None and dialect not in _DIALECTS:
            raise ValueError(f"dialect must be 'postgres' or 'mysql', got {dialect!r}")
        self.dialect = dialect

    def schedule(
        self,
        cursor: Any,
        queue: str,
        key: str,
        *,
        payload: Json = None,
        delay: Optional[Duration] = None,
        due_at: Optional[Time] = None,
        repeat: Union[Repeat, Mapping[str, Any], None] = None,
        tags: Optional[List[str]] = None,
        max_attempts: Optional[int] = None,
        backoff: Union[Backoff, Mapping[str, Any], None] = None,
        if_exists: Optional[IfExists] = None,
        target: Union[Target, Mapping[str, Any], None] = None,
        priority: Optional[int] = None,
        debounce: Optional[Duration] = None,
        group: Optional[str] = None,
        unique_for: Union[Duration, UniqueFor, None] = None,
        calendar: Optional[str] = None,
        align: Optional[Align] = None,
        misfire: Optional[Misfire] = None,
        misfire_after: Optional[Duration] = None,
        catch_up_max: Optional[int] = None,
        overlap: Optional[Overlap] = None,
        jitter: Optional[Duration] = None,
        table: Optional[str] = None,
        dialect: Optional[Dialect] = None,
    ) -> Optional[int]:
        """Write a ``schedule`` row: applied as ``Client.schedule(queue, key, …)`` with the
        same arguments would be (``PUT /v1/queues/{queue}/tasks/{key}``)."""
        _require_text(queue, "queue")
        _require_text(key, "key")
        body = task_body(
            payload=payload, delay=delay, due_at=due_at, repeat=repeat, tags=tags,
            max_attempts=max_attempts, backoff=backoff, if_exists=if_exists, target=target,
            priority=priority, debounce=debounce, group=group, unique_for=unique_for,
            calendar=calendar, align=align, misfire=misfire, misfire_after=misfire_after,
            catch_up_max=catch_up_max, overlap=overlap, jitter=jitter,
        )
        return self._insert(cursor, queue, key, "schedule", body, table, dialect)

    def cancel(
        self,
        cursor: Any,
        queue: str,
        key: str,
        *,
        table: Optional[str] = None,
        dialect: Optional[Dialect] = None,
    ) -> Optional[int]:
        """Write a ``cancel`` row: applied as ``DELETE /v1/queues/{queue}/tasks/{key}``."""
        _require_text(queue, "queue")
        _require_text(key, "key")
        return self._insert(cursor, queue, key, "cancel", None, table, dialect)

    def cancel_tag(
        self,
        cursor: Any,
        queue: str,
        tag: str,
        *,
        table: Optional[str] = None,
        dialect: Optional[Dialect] = None,
    ) -> Optional[int]:
        """Write a ``cancel_tag`` row (the tag in its ``key`` column): applied as
        ``DELETE /v1/queues/{queue}/tags/{tag}``, every task of the queue carrying it."""
        _require_text(queue, "queue")
        _require_text(tag, "tag")
        return self._insert(cursor, queue, tag, "cancel_tag", None, table, dialect)

    def _insert(
        self,
        cursor: Any,
        queue: str,
        key: str,
        op: str,
        body: Optional[Dict[str, Any]],
        table: Optional[str],
        dialect: Optional[Dialect],
    ) -> Optional[int]:
        name = check_table_name(table) if table is not None else self.table
        if dialect is not None and dialect not in _DIALECTS:
            raise ValueError(f"dialect must be 'postgres' or 'mysql', got {dialect!r}")
        if inspect.iscoroutinefunction(getattr(cursor, "execute", None)):
            raise TypeError("an async cursor: the outbox helpers take a synchronous DB-API cursor")
        sql_dialect = dialect or self.dialect or detect_dialect(cursor)
        values: List[Any] = [queue, key, op]
        if body is not None:
            values.append(json.dumps(body))
        marks, params = _placeholders(_paramstyle(cursor), values)
        if sql_dialect == "postgres":
            body_sql = f"CAST({marks[3]} AS jsonb)" if body is not None else "NULL"
            cursor.execute(
                f"INSERT INTO {name} (queue, key, op, body) "
                f"VALUES ({marks[0]}, {marks[1]}, {marks[2]}, {body_sql}) RETURNING id",
                params,
            )
            row = cursor.fetchone()
            if row is None:
                return None
            return int(row["id"] if isinstance(row, Mapping) else row[0])
        body_sql = marks[3] if body is not None else "NULL"
        cursor.execute(
            f"INSERT INTO {name} (queue, `key`, op, body) "
            f"VALUES ({marks[0]}, {marks[1]}, {marks[2]}, {body_sql})",
            params,
        )
        row_id = getattr(cursor, "lastrowid", None)
        return int(row_id) if row_id else None


_DEFAULT = Outbox()

#: ``schedule(cursor, queue, key, *, payload=…, delay=…, …, table=, dialect=)``: a
#: ``schedule`` row in ``punctual_outbox`` (or ``table``); see ``Outbox.schedule``.
schedule = _DEFAULT.schedule
#: ``cancel(cursor, queue, key, *, table=, dialect=)``: a ``cancel`` row.
cancel = _DEFAULT.cancel
#: ``cancel_tag(cursor, queue, tag, *, table=, dialect=)``: a ``cancel_tag`` row.
cancel_tag = _DEFAULT.cancel_tag

__all__ = [
    "DEFAULT_TABLE", "Dialect", "Outbox", "schedule", "cancel", "cancel_tag",
    "check_table_name", "detect_dialect",
]
