"""Slack's request signatures (v0): ``X-Slack-Signature`` is ``v0=`` and the hex HMAC-SHA256,
keyed with the app's signing secret, of ``v0:<X-Slack-Request-Timestamp>:<raw body>``; a
timestamp more than five minutes from now is refused, so a captured request cannot be
replayed later. Pure (the standard library), shared by the interactive endpoint and the
Slack stand-in that signs what it sends."""

from __future__ import annotations

import hashlib
import hmac

from colony.errors import Unauthorized
from colony.webhooks import HeaderReader

WINDOW_SECONDS = 300


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` of ``body`` sent at ``timestamp`` (Unix seconds)."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify(secret: str, headers: HeaderReader, body: bytes, now: float) -> None:
    """``Unauthorized`` unless the request is signed with ``secret`` within the window."""
    stamp = str(headers.get("x-slack-request-timestamp") or "")
    given = str(headers.get("x-slack-signature") or "")
    if not stamp or not given:
        raise Unauthorized("a Slack request needs X-Slack-Request-Timestamp and -Signature")
    try:
        sent = int(stamp)
    except ValueError:
        raise Unauthorized("X-Slack-Request-Timestamp is not a Unix time") from None
    if abs(now - sent) > WINDOW_SECONDS:
        raise Unauthorized("the Slack request is older than five minutes (or from the future)")
    if not hmac.compare_digest(signature(secret, stamp, body), given):
        raise Unauthorized("the Slack request's signature does not verify")
