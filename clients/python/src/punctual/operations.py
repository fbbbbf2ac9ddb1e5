"""Every operation of the server's OpenAPI document, and what this client does with it:
the ``Client`` and ``AsyncClient`` methods that call it, or why it offers none.

``tests/test_api_surface.py`` reads ``/openapi.json`` of the real server and fails when the
server has an operation that is in neither table (or a table names one the server does
not have, or a method the clients lack), so a new route is a decision, not an oversight.
Operations are named as the document lists them: ``METHOD path``.
"""
from __future__ import annotations

from typing import Dict, Tuple

#: Operation → the methods of ``Client`` (and, by the same names, ``AsyncClient``).
OFFERED: Dict[str, Tuple[str, ...]] = {
    "PUT /v1/queues/{queue}/tasks/{key}": ("schedule",),
    "POST /v1/queues/{queue}/tasks": ("schedule_many",),
    "GET /v1/queues/{queue}/tasks/{key}": ("get",),
    "GET /v1/queues/{queue}/tasks/{key}/history": ("history",),
    "DELETE /v1/queues/{queue}/tasks/{key}": ("cancel",),
    "DELETE /v1/queues/{queue}/tags/{tag}": ("cancel_tag",),
    "GET /v1/queues/{queue}/tasks": ("list_page", "list"),
    "DELETE /v1/queues/{queue}/tasks": ("purge",),
    "GET /v1/queues": ("queues",),
    "GET /v1/queues/{queue}": ("queue_stats",),
    "GET /v1/queues/{queue}/groups": ("groups_page",),
    "GET /v1/queues/{queue}/settings": ("get_settings",),
    "PUT /v1/queues/{queue}/settings": ("put_settings",),
    "PATCH /v1/queues/{queue}/settings": ("patch_settings",),
    "DELETE /v1/queues/{queue}/settings": ("delete_settings",),
    "POST /v1/queues/{queue}/pause": ("pause",),
    "POST /v1/queues/{queue}/resume": ("resume",),
    "GET /v1/calendars": ("calendars",),
    "GET /v1/calendars/{name}": ("get_calendar",),
    "PUT /v1/calendars/{name}": ("put_calendar",),
    "DELETE /v1/calendars/{name}": ("delete_calendar",),
    "GET /v1/queues/{queue}/dead": ("dead_page", "dead"),
    "POST /v1/queues/{queue}/dead/{key}/retry": ("retry_dead",),
    "POST /v1/queues/{queue}/dead/retry": ("retry_dead_many",),
    "DELETE /v1/queues/{queue}/dead/{key}": ("delete_dead",),
    "POST /v1/queues/{queue}/lease": ("lease",),
    "POST /v1/leases/{lease_id}/ack": ("ack",),
    "POST /v1/acks": ("ack_many",),
    "POST /v1/leases/{lease_id}/extend": ("extend",),
    "GET /v1/access": ("access",),
    "GET /v1/audit": ("audit_page", "audit"),
    "GET /readyz": ("ready",),
}

#: Operation → why the client does not offer it.
NOT_OFFERED: Dict[str, str] = {
    "GET /": "the dashboard's HTML page, for browsers",
    "GET /healthz": "liveness of the process, for orchestrators; ready() says more",
    "GET /metrics": "Prometheus text, for a scraper",
    "GET /openapi.json": "the API's description itself, for tools",
    "GET /v1/queues/{queue}/activity": "the dashboard's in-memory view of one node's recent "
                                       "outcomes, not a record to build on",
}
