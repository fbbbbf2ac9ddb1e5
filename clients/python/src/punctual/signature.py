"""Checking the ``Punctual-Signature`` header of a webhook delivery (docs/webhooks.md).

The header is ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``. The check
runs over the raw bytes of the body (before any JSON parsing), compares in constant time
and refuses timestamps further than ``tolerance`` seconds from now, in either direction
(replays, and clock skew beyond the allowance).
"""
from __future__ import annotations

import hashlib
import hmac
import time
from typing import Optional, Union

from .errors import InvalidSignature


def _digest(body: bytes, secret: Union[str, bytes], timestamp: str) -> str:
    """Hex HMAC-SHA256 of ``"<timestamp>.<body>"`` with ``secret``."""
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hmac.new(key, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


def sign(body: bytes, secret: Union[str, bytes], timestamp: int) -> str:
    """The header value the server would send for ``body`` at ``timestamp`` (for tests)."""
    return f"t={timestamp},v1={_digest(body, secret, str(timestamp))}"


def check_signature(
    body: bytes,
    header: Optional[str],
    secret: Union[str, bytes],
    tolerance: float = 300,
    now: Optional[float] = None,
) -> None:
    """Raise ``InvalidSignature`` (saying why) unless the delivery is signed and fresh."""
    if not header:
        raise InvalidSignature("no Punctual-Signature header")
    timestamp: Optional[str] = None
    sent = []
    for part in header.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if name == "t":
            timestamp = value
        elif name == "v1":
            sent.append(value)
    if timestamp is None or not timestamp.isdigit() or not sent:
        raise InvalidSignature("malformed Punctual-Signature header")
    expected = _digest(body, secret, timestamp).encode("ascii")
    # Every v1 is compared (a server rotating secrets could send two), each in constant time.
    matched = False
    for candidate in sent:
        if hmac.compare_digest(expected, candidate.encode("ascii", "replace")):
            matched = True
    if not matched:
        raise InvalidSignature("signature mismatch")
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance:
        raise InvalidSignature("signature timestamp outside the tolerance")


def verify_signature(
    body: bytes,
    header: Optional[str],
    secret: Union[str, bytes],
    tolerance: float = 300,
    now: Optional[float] = None,
) -> bool:
    """True when ``header`` signs ``body`` with ``secret`` within ``tolerance`` seconds."""
    try:
        check_signature(body, header, secret, tolerance, now)
    except InvalidSignature:
        return False
    return True
