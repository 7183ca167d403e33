"""HubSpot's webhook deliveries, from a stand-in world's journal
(``HubSpotWorld.journal``): batches of at most 100 events, each request signed as HubSpot
signs it (v3: ``X-HubSpot-Signature-v3`` is the base64 HMAC-SHA256, keyed by the app's
client secret, of method + URI + body + ``X-HubSpot-Request-Timestamp``, the URI with the
characters HubSpot decodes decoded), and POSTed to a URL over real HTTP (``post``) or handed
to a test client (``signed``).

Written from HubSpot's request-validation page, not from our verifier, so a mistake in one
is not repeated in the other.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from typing import Any

import httpx

MAX_BATCH = 100
# what HubSpot decodes in the URI it signs (every other escape stays as it is)
_DECODED = frozenset(":/?@!$'()*,;")


def _uri(url: str) -> str:
    def plain(match: re.Match[str]) -> str:
        char = chr(int(match[1], 16))
        return char if char in _DECODED else match[0]

    return re.sub(r"%([0-9A-Fa-f]{2})", plain, url)


def sign(secret: str, method: str, url: str, body: bytes, timestamp_ms: int) -> dict[str, str]:
    """The headers HubSpot sends with ``body`` POSTed to ``url`` at ``timestamp_ms``."""
    stamp = str(timestamp_ms)
    source = f"{method.upper()}{_uri(url)}".encode() + body + stamp.encode()
    digest = hmac.new(secret.encode(), source, hashlib.sha256).digest()
    return {
        "Content-Type": "application/json",
        "X-HubSpot-Signature-v3": base64.b64encode(digest).decode(),
        "X-HubSpot-Request-Timestamp": stamp,
        "X-HubSpot-Signature-Version": "v3",
    }


def batches(events: Sequence[dict[str, Any]], size: int = MAX_BATCH) -> list[list[dict[str, Any]]]:
    return [list(events[i : i + size]) for i in range(0, len(events), size)]


def signed(
    secret: str, url: str, events: Sequence[dict[str, Any]], timestamp_ms: int
) -> tuple[bytes, dict[str, str]]:
    """One delivery: its body and headers."""
    body = json.dumps(list(events), separators=(",", ":")).encode()
    return body, sign(secret, "POST", url, body, timestamp_ms)


def post(
    url: str,
    events: Sequence[dict[str, Any]],
    secret: str,
    timestamp_ms: int,
    *,
    client: httpx.Client | None = None,
) -> httpx.Response:
    """Deliver one batch to ``url``, as HubSpot would."""
    body, headers = signed(secret, url, events, timestamp_ms)
    if client is not None:
        return client.post(url, content=body, headers=headers)
    return httpx.post(url, content=body, headers=headers, timeout=30.0)
