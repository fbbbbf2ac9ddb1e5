"""punctual: a client and a pull worker for the punctual delayed-task server.

    import punctual

    client = punctual.Client()                      # $PUNCTUAL_SERVER, $PUNCTUAL_TOKEN
    client.schedule("reminders", "r-1", delay="24h", payload={"to": "ana"}, tags=["flow-9"])

    worker = punctual.Worker(client)

    @worker.handler("reminders", concurrency=4)
    def remind(task: punctual.Lease) -> None:       # None (or Done()) = done
        print("remind", task.payload["to"], "attempt", task.attempt)

    worker.run()                                    # until SIGINT / SIGTERM

``AsyncClient`` and ``AsyncWorker`` are the same over asyncio (``await
client.schedule(…)``, ``async def`` handlers). Results are frozen dataclasses
(``results``): ``Task``, ``Lease``, ``QueueSettings``…, each with the JSON it was read
from in ``raw``.

The outbox (``punctual.outbox``) writes a schedule or a cancel as a row of your own
database inside your own transaction, for punctual to apply once it is committed.
"""
from . import outbox
from ._core import DEFAULT_SERVER
from .async_client import AsyncClient
from .async_worker import AsyncHandler, AsyncWorker
from .calendars import Calendar, Workday
from .client import Client
from .errors import (
    Conflict,
    Forbidden,
    InvalidArgument,
    InvalidSignature,
    NotFound,
    PayloadTooLarge,
    PunctualError,
    Unauthorized,
    Unavailable,
    error_from_response,
)
from .results import (
    Access,
    AckedOutcome,
    AckResult,
    AuditAction,
    AuditEntry,
    AuditPage,
    BatchResult,
    Completed,
    FireLag,
    GroupCounts,
    GroupsPage,
    HistoryEvent,
    HistoryEventKind,
    HistoryState,
    Lease,
    OutboxLag,
    Page,
    Permission,
    QueueSettings,
    QueueStats,
    QueueSummary,
    ScheduleOutcome,
    ScheduleResult,
    Source,
    Task,
    TaskDefaults,
    TaskHistory,
    TaskState,
)
from .signature import check_signature, sign, verify_signature
from .types import (
    Align,
    Backoff,
    CronSyntax,
    Done,
    Fail,
    IfExists,
    Misfire,
    Outcome,
    Overlap,
    Repeat,
    Reschedule,
    Retry,
    Target,
    TaskSpec,
    UniqueFor,
)
from .worker import Handler, Worker

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SERVER", "Client", "AsyncClient", "Worker", "AsyncWorker", "Handler", "AsyncHandler",
    "outbox",
    "PunctualError", "InvalidArgument", "Unauthorized", "Forbidden", "NotFound", "Conflict",
    "PayloadTooLarge", "Unavailable", "InvalidSignature", "error_from_response",
    "verify_signature", "check_signature", "sign",
    "Task", "TaskState", "Lease", "Page", "GroupCounts", "GroupsPage", "ScheduleResult",
    "ScheduleOutcome", "BatchResult", "AckResult", "Completed", "QueueSummary", "QueueStats",
    "FireLag", "OutboxLag", "QueueSettings", "TaskDefaults", "Source", "Access", "Permission",
    "TaskHistory", "HistoryEvent", "HistoryEventKind", "HistoryState", "AckedOutcome",
    "AuditPage", "AuditEntry", "AuditAction",
    "TaskSpec", "UniqueFor", "Calendar", "Workday", "Misfire", "Overlap", "CronSyntax",
    "IfExists", "Align", "Backoff", "Repeat", "Target", "Done", "Retry", "Reschedule", "Fail",
    "Outcome",
]
