"""punctual: a client and a pull worker for the punctual delayed-task server.

    import punctual

    client = punctual.Client()                      # $PUNCTUAL_SERVER, $PUNCTUAL_TOKEN
    client.schedule("reminders", "r-1", delay="24h", payload={"to": "ana"}, tags=["flow-9"])

    worker = punctual.Worker(client)

    @worker.handler("reminders", concurrency=4)
    def remind(task: punctual.Lease) -> None:       # None (or Done()) = done
        print("remind", task.payload["to"], "attempt", task.attempt)

    worker.run()                                    # until SIGINT / SIGTERM

The outbox (``punctual.outbox``) writes a schedule or a cancel as a row of your own
database inside your own transaction, for punctual to apply once it is committed.
"""
from .calendars import Calendar, Workday
from .client import DEFAULT_SERVER, Client
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
from . import outbox
from .signature import check_signature, sign, verify_signature
from .types import (
    AckResult,
    Backoff,
    BatchResult,
    Completed,
    Done,
    Fail,
    GroupCounts,
    GroupsPage,
    Lease,
    Misfire,
    Outcome,
    Overlap,
    Page,
    Repeat,
    Reschedule,
    Retry,
    ScheduleResult,
    Target,
    Task,
    TaskSpec,
    UniqueFor,
)
from .worker import Worker

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SERVER", "Client", "Worker", "outbox",
    "PunctualError", "InvalidArgument", "Unauthorized", "Forbidden", "NotFound", "Conflict",
    "PayloadTooLarge", "Unavailable", "InvalidSignature", "error_from_response",
    "verify_signature", "check_signature", "sign",
    "Task", "Lease", "Page", "GroupCounts", "GroupsPage", "ScheduleResult", "BatchResult", "AckResult", "TaskSpec",
    "UniqueFor", "Completed", "Calendar", "Workday", "Misfire", "Overlap",
    "Backoff", "Repeat", "Target", "Done", "Retry", "Reschedule", "Fail", "Outcome",
]
