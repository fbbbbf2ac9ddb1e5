"""Checking the ``Punctual-Signature`` header of a webhook delivery (docs/webhooks.md).

The header is ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``, with one
``v1`` per secret while the server's queue rotates its secret (the new one first);
other fields are ignored. The check runs over the raw bytes of the body (before any JSON
parsing), accepts the delivery when any ``v1`` matches any of the receiver's secrets
(its current and, during a rotation, its previous one), compares in constant time and
refuses timestamps further than ``tolerance`` seconds from now, in either direction
(replays, and clock skew beyond the allowance).
"""
from __future__ import annotations

import hashlib
import hmac
import time
from typing import List, Optional, Sequence, Union

from .errors import InvalidSignature

Secret = Union[str, bytes]
#: One secret, or several (the current and the previous one during a rotation).
Secrets = Union[Secret, Sequence[Secret]]


def _as_list(secret: Secrets) -> List[Secret]:
    return [secret] if isinstance(secret, (str, bytes)) else list(secret)


def _digest(body: bytes, secret: Secret, timestamp: str) -> str:
    """Hex HMAC-SHA256 of ``"<timestamp>.<body>"`` with ``secret``."""
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hmac.new(key, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


def sign(body: bytes, secret: Secrets, timestamp: int) -> str:
    """The header value the server would send for ``body`` at ``timestamp`` (for tests):
    one ``v1`` per secret, in the order given."""
    signatures = "".join(f",v1={_digest(body, s, str(timestamp))}" for s in _as_list(secret))
    return f"t={timestamp}{signatures}"


def check_signature(
    body: bytes,
    header: Optional[str],
    secret: Secrets,
    tolerance: float = 300,
    now: Optional[float] = None,
) -> None:
    """Raise ``InvalidSignature`` (saying why) unless the delivery is signed with one of
    the secrets and fresh."""
    secrets = _as_list(secret)
    if not secrets:
        raise InvalidSignature("no secret to check the signature with")
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
            sent.append(value.encode("ascii", "replace"))
    if timestamp is None or not timestamp.isdigit() or not sent:
        raise InvalidSignature("malformed Punctual-Signature header")
    # Every pair is compared, each in constant time: which one matched is no secret.
    matched = False
    for s in secrets:
        expected = _digest(body, s, timestamp).encode("ascii")
        for candidate in sent:
            if hmac.compare_digest(expected, candidate):
                matched = True
    if not matched:
        raise InvalidSignature("signature mismatch")
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance:
        raise InvalidSignature("signature timestamp outside the tolerance")


def verify_signature(
    body: bytes,
    header: Optional[str],
    secret: Secrets,
    tolerance: float = 300,
    now: Optional[float] = None,
) -> bool:
    """True when ``header`` signs ``body`` with ``secret`` (or one of several secrets)
    within ``tolerance`` seconds."""
    try:
        check_signature(body, header, secret, tolerance, now)
    except InvalidSignature:
        return False
    return True
