"""Compact signed, expiring tokens for links we mail out (approval links, unsubscribe links):
``<base64url JSON payload>.<base64url HMAC-SHA256>``, standard library only.

Each use has its own ``domain`` (prefixed to what is MACed), so a token made for one purpose
never verifies for another even under the same key. The payload carries its version ``v``
and its expiry ``e`` (Unix seconds); ``verify`` checks the MAC in constant time first, then
the shape, then the expiry, and every failure is ``Unauthorized`` worded for ``what``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from colony.errors import ConfigError, Unauthorized, ValidationFailed

MIN_KEY_BYTES = 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: str | bytes, domain: bytes, payload: str, setting: str) -> str:
    secret = key.encode() if isinstance(key, str) else key
    if len(secret) < MIN_KEY_BYTES:
        raise ConfigError(f"{setting} must be at least {MIN_KEY_BYTES} bytes of random data")
    return _b64(hmac.new(secret, domain + payload.encode("ascii"), hashlib.sha256).digest())


def sign(
    key: str | bytes,
    domain: bytes,
    body: Mapping[str, Any],
    expires_at: datetime,
    *,
    setting: str,
) -> str:
    if expires_at.tzinfo is None:
        raise ValidationFailed("expires_at must be timezone-aware")
    claims = {**body, "e": int(expires_at.timestamp())}
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    return f"{payload}.{_mac(key, domain, payload, setting)}"


def verify(
    key: str | bytes,
    domain: bytes,
    token: str,
    now: datetime,
    *,
    version: int,
    what: str,
    setting: str,
) -> dict[str, Any]:
    """The payload of ``token`` (without ``e``) if it verifies, is of ``version`` and has
    not expired."""
    if now.tzinfo is None:
        raise ValidationFailed("now must be timezone-aware")
    payload, dot, signature = (token or "").strip().partition(".")
    if not (dot and payload and signature and payload.isascii() and signature.isascii()):
        raise Unauthorized(f"the {what} is malformed")
    if not hmac.compare_digest(_mac(key, domain, payload, setting), signature):
        raise Unauthorized(f"the {what}'s signature does not verify")
    try:
        body = json.loads(_unb64(payload))
        if not isinstance(body, dict) or body.get("v") != version:
            raise ValueError("version")
        expires = int(body.pop("e"))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise Unauthorized(f"the {what} is malformed") from None
    if now.timestamp() >= expires:
        raise Unauthorized(f"the {what} has expired; ask for a new one")
    return body
