"""What a wire stand-in records and answers: ``RecordedRequest``, ``Reply``, ``Route`` (a
method and a path pattern with its default responder) and ``error_reply``, the error body
both model SDKs parse. The server (``server``) and the protocol routes (``openai``,
``gemini``) are built from these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

_GRPC_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as it arrived."""

    method: str
    path: str  # without the query string
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]  # names lower-cased
    body: Any  # parsed JSON; None when empty or not JSON
    raw_body: bytes
    route: str | None  # name of the matched route, None when nothing matched
    params: Mapping[str, str]  # named groups of the matched route's path pattern

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


NO_ANSWER = 0  # a Reply with this status closes the connection without a response


@dataclass(frozen=True, slots=True)
class Reply:
    """What to send back. ``body`` is JSON-encoded unless it is ``bytes``.

    With ``events`` the body is streamed instead (``text/event-stream``, no length: the
    connection's end ends it): each event written and flushed on its own, ``first_delay``
    seconds before the first (a model's time to first token) and ``gap`` seconds before each
    later one. ``None`` delays are the server's (``WireServer.pace``, 0 unless set).
    ``status=NO_ANSWER`` sends nothing at all: the connection is closed, as an upstream that
    timed out behind a proxy or died mid-request leaves it."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    events: tuple[bytes, ...] | None = None
    first_delay: float | None = None
    gap: float | None = None


def sse_events(payloads: Sequence[Any], *, done: str | None = None) -> tuple[bytes, ...]:
    """``data: <json>`` events, one per payload (and ``data: <done>`` last, when given)."""
    events = [f"data: {json.dumps(p, separators=(',', ':'))}\n\n".encode() for p in payloads]
    if done is not None:
        events.append(f"data: {done}\n\n".encode())
    return tuple(events)


def text_pieces(text: str, size: int = 5) -> list[str]:
    """``text`` cut every ``size`` characters, as a stream's deltas (token-sized, and cut
    through words, escapes and multi-byte characters alike: what a client must put back)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


Responder = Callable[[RecordedRequest], Reply]
Scripted = Reply | Responder


@dataclass(frozen=True, slots=True)
class Route:
    """``method`` plus a regex that must match the whole path; named groups become params."""

    name: str
    method: str
    pattern: re.Pattern[str]
    respond: Responder

    @classmethod
    def of(cls, name: str, method: str, path_regex: str, respond: Responder) -> Route:
        return cls(name, method.upper(), re.compile(path_regex), respond)


def error_reply(
    status: int, message: str | None = None, *, headers: Mapping[str, str] | None = None
) -> Reply:
    """An error body both SDKs parse: OpenAI reads ``message``/``type``, Gemini ``status``."""
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    body = {
        "error": {
            "code": status,
            "message": message or f"scripted {status} {phrase}",
            "status": _GRPC_STATUS.get(status, "UNKNOWN"),
            "type": "invalid_request_error" if 400 <= status < 500 else "server_error",
        }
    }
    return Reply(status, body, dict(headers or {}))
