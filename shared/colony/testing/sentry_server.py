"""A local stand-in for Sentry's ingestion: ``POST /api/<project>/envelope/`` on 127.0.0.1.

Point the real sentry-sdk at ``SentryServer.dsn`` (``http://<key>@127.0.0.1:<port>/<project>``)
and its own HTTP transport sends every envelope over the loopback, compressed as it chooses
(``Content-Encoding: gzip`` or ``br``) and authenticated with ``X-Sentry-Auth``. The stand-in
parses Sentry's envelope format itself, not with the SDK's code, so a test reads what went
over the wire:

    {"event_id": "...", "sent_at": "..."}\\n                  the envelope header
    {"type": "event", "length": 41}\\n                         an item header
    <41 bytes of payload>\\n                                   (no length: up to the newline)
    ... more items

``reporting_to`` initialises this process's Sentry against it (the deployed ``init_sentry``,
its scrubbing included); a function server in a subprocess gets ``SENTRY_DSN=dsn`` instead.
``wait_for`` blocks until the envelopes received satisfy a condition (woken by each arrival,
bounded by a timeout): a function flushes its events before it answers, but a streamed
response flushes when its stream closes, after the client has read the last byte.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from colony.observability.categories import TAG
from colony.observability.sentry import init_sentry, shutdown_sentry
from colony.settings import Settings
from colony.testing.wire.replies import RecordedRequest, Reply, Route, error_reply
from colony.testing.wire.server import WireServer

KEY = "public"


@dataclass(frozen=True)
class Item:
    type: str
    headers: dict[str, Any]
    payload: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.payload) if self.payload else None


@dataclass(frozen=True)
class ReceivedEnvelope:
    headers: dict[str, Any]
    items: list[Item] = field(default_factory=list)
    raw: bytes = b""  # the decompressed body, as the SDK serialised it


def parse_envelope(body: bytes) -> ReceivedEnvelope:
    """Sentry's envelope format (see the module docstring); ``ValueError`` if it is not one."""
    first, _, rest = body.partition(b"\n")
    headers = json.loads(first)
    if not isinstance(headers, dict):
        raise ValueError("the envelope header is not a JSON object")
    items: list[Item] = []
    while rest.strip():
        line, _, rest = rest.partition(b"\n")
        item = json.loads(line)
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise ValueError("an item header is not a JSON object with a type")
        length = item.get("length")
        if isinstance(length, int):
            payload, rest = rest[:length], rest[length:]
            if len(payload) != length:
                raise ValueError("an item is shorter than its length")
            rest = rest.removeprefix(b"\n")
        else:
            payload, _, rest = rest.partition(b"\n")
        items.append(Item(item["type"], item, payload))
    return ReceivedEnvelope(headers, items, body)


def _decompress(body: bytes, encoding: str) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    if encoding == "br":
        import brotli  # lazy: only when the SDK found brotli installed and used it

        return bytes(brotli.decompress(body))
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


class SentryServer(WireServer):
    """Sentry's envelope endpoint; use as a context manager, give the SDK ``dsn``."""

    def __init__(self, project: str = "1") -> None:
        self.project = project
        self._received: list[ReceivedEnvelope] = []
        self._arrived = threading.Condition()
        route = Route.of(
            "sentry.envelope", "POST", r"/api/(?P<project>[0-9]+)/envelope/", self._take
        )
        super().__init__(routes=[route])

    @property
    def dsn(self) -> str:
        host = self.base_url.removeprefix("http://")
        return f"http://{KEY}@{host}/{self.project}"

    def _take(self, request: RecordedRequest) -> Reply:
        auth = request.header("X-Sentry-Auth") or ""
        if f"sentry_key={KEY}" not in auth or request.params.get("project") != self.project:
            return error_reply(401, "unknown DSN")
        encoding = (request.header("Content-Encoding") or "").strip().lower()
        try:
            envelope = parse_envelope(_decompress(request.raw_body, encoding))
        except ValueError as error:
            return error_reply(400, f"not an envelope: {error}")
        with self._arrived:
            self._received.append(envelope)
            self._arrived.notify_all()
        return Reply(200, {"id": envelope.headers.get("event_id")})

    # -- reading ------------------------------------------------------------------------------

    @property
    def envelopes(self) -> list[ReceivedEnvelope]:
        with self._arrived:
            return list(self._received)

    def events(self) -> list[dict[str, Any]]:
        """Every error or message event received, in arrival order."""
        return [item.json for env in self.envelopes for item in env.items if item.type == "event"]

    def raw(self) -> bytes:
        """Every envelope as it arrived (decompressed): for checking what must never be sent."""
        return b"\n".join(env.raw for env in self.envelopes)

    def of_category(self, category: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if (e.get("tags") or {}).get(TAG) == category]

    def wait_for(self, condition: Callable[[SentryServer], bool], timeout: float = 10.0) -> None:
        """Block until ``condition(self)`` holds, re-checked as each envelope arrives."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while not condition(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"Sentry received {len(self._received)} envelope(s)")
                self._arrived.wait(left)

    def clear(self) -> None:
        with self._arrived:
            self._received.clear()
        self.reset()


@contextmanager
def reporting_to(server: SentryServer) -> Iterator[SentryServer]:
    """This process's Sentry initialised as a function's (``init_sentry``) with the server's
    DSN and the SDK's own HTTP transport; shut down (its queue sent) afterwards.

    Set ``SENTRY_RELEASE`` in the environment first, or the SDK runs git to find one."""
    if not init_sentry(Settings.from_env({"SENTRY_DSN": server.dsn})):
        raise AssertionError("Sentry did not initialise")
    try:
        yield server
    finally:
        shutdown_sentry()
