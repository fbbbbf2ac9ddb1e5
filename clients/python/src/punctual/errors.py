"""Typed errors: one class per error code of the API (API.md, "Errors").

Every error carries the server's human message, its code, the HTTP status and, for
``invalid_argument``, the ``field`` the server named. ``error_from_detail`` is the one
place that maps the API's error object to an exception; ``error_from_response`` reads it
from a response's body.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Type


class PunctualError(Exception):
    """Base of every error the client raises for a refusal or an unreachable server."""

    code: str = "internal"

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: Optional[int] = None,
        field: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status
        self.field = field

    @property
    def is_transient(self) -> bool:
        """True when repeating the call later may succeed."""
        return False


class InvalidArgument(PunctualError):
    """400: the request was malformed; ``field`` names the offending part when known."""

    code = "invalid_argument"


class Unauthorized(PunctualError):
    """401: no token, or a token the server does not know."""

    code = "unauthorized"


class Forbidden(PunctualError):
    """403: the token lacks the permission (the message names it and the queue)."""

    code = "forbidden"


class NotFound(PunctualError):
    """404: no such task, dead task or lease."""

    code = "not_found"


class Conflict(PunctualError):
    """409: the task exists (``if_exists: error``), the lease is gone, a version moved."""

    code = "conflict"


class PayloadTooLarge(PunctualError):
    """413: the payload or the batch is over the server's limit."""

    code = "payload_too_large"


class Unavailable(PunctualError):
    """503 (the store is down) or the server could not be reached at all."""

    code = "unavailable"

    @property
    def is_transient(self) -> bool:
        return True


class InvalidSignature(PunctualError):
    """A webhook delivery whose ``Punctual-Signature`` does not check out."""

    code = "invalid_signature"


_BY_CODE: Dict[str, Type[PunctualError]] = {
    "invalid_argument": InvalidArgument,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "conflict": Conflict,
    "payload_too_large": PayloadTooLarge,
    "unavailable": Unavailable,
}

_BY_STATUS: Dict[int, Type[PunctualError]] = {
    400: InvalidArgument,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    503: Unavailable,
}


def error_from_response(status: int, body: bytes) -> PunctualError:
    """The exception for a non-2xx answer: by the body's ``error.code``, else by status."""
    detail: Mapping[str, Any] = {}
    try:
        parsed = json.loads(body) if body else None
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            detail = parsed["error"]
    except ValueError:
        pass
    if not isinstance(detail.get("message"), str):
        text = body.decode("utf-8", "replace").strip() if body else ""
        detail = {**detail, "message": f"HTTP {status}" + (f": {text[:200]}" if text else "")}
    return error_from_detail(status, detail)


def error_from_detail(status: int, detail: Mapping[str, Any]) -> PunctualError:
    """The exception for an error object (``{"code", "message", "field"}``) answered with
    ``status``, as a whole answer's body or a batch item's ``error`` holds it."""
    code = detail.get("code")
    cls = _BY_CODE.get(code) if isinstance(code, str) else None
    if cls is None:
        cls = _BY_STATUS.get(status, PunctualError)
    message = detail.get("message")
    field = detail.get("field")
    return cls(
        message if isinstance(message, str) else f"HTTP {status}",
        code=code if isinstance(code, str) else None,
        status=status,
        field=field if isinstance(field, str) else None,
    )
