"""Structured logs for Cloud Logging: one JSON object per line, with the request's ids.

Cloud Run (and so Cloud Functions gen2) turns each JSON line a process writes into one log
entry: ``severity`` and ``message`` become the entry's, ``logging.googleapis.com/trace`` ties
it to the request's trace, and every other field lands in ``jsonPayload``. So each line says
which ``function`` wrote it and, where known, the ``org_id``, ``run_id`` and ``event_id`` it
was working for.

The edge (``colony.runtime.edge``) calls ``configure_logging`` when a function module loads,
opens ``request_scope`` around every request (the trace from ``traceparent`` or
``X-Cloud-Trace-Context``) and ``bind`` once it knows the event's ids; the ids live in a
``ContextVar``, so they are cleared when the request ends and never leak into the next one.

Never payloads or prompts: a record's exception is rendered by ``safe_traceback`` (frames,
type and our error code, never the exception's message, which may quote a payload), and the
edge's own messages carry ids and codes only.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from colony.errors import ColonyError

TRACE_FIELD = "logging.googleapis.com/trace"
SPAN_FIELD = "logging.googleapis.com/spanId"
SAMPLED_FIELD = "logging.googleapis.com/trace_sampled"
SOURCE_FIELD = "logging.googleapis.com/sourceLocation"

_SEVERITY = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARNING",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "CRITICAL",
}
# W3C: version-traceid-parentid-flags (all lower-case hex); ``ff`` is not a valid version.
_TRACEPARENT = re.compile(r"^(?!ff)[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
# Google's older header: TRACE_ID[/SPAN_ID][;o=OPTIONS], the span id in decimal.
_CLOUD_TRACE = re.compile(r"^([0-9a-fA-F]{32})(?:/([0-9]{1,20}))?(?:;o=([0-9]+))?$")
_MAX_CHAIN = 9  # blocks rendered: up to five exceptions and the lines between them
_CAUSE = "The above exception was the direct cause of the following exception:"
_CONTEXT = "During handling of the above exception, another exception occurred:"


@dataclass(frozen=True, slots=True)
class LogContext:
    """What the current request is about; every field is optional."""

    function: str | None = None
    org_id: str | None = None
    run_id: str | None = None
    event_id: str | None = None
    trace: str | None = None  # projects/<project>/traces/<trace id>
    span_id: str | None = None  # 16 hex digits
    sampled: bool | None = None


_NOWHERE = LogContext()  # frozen: safe to share as the default
_context: ContextVar[LogContext] = ContextVar("colony_log_context", default=_NOWHERE)
_process_function: str | None = None  # the deployed function, for lines outside a request
_lock = threading.Lock()
_handler: logging.Handler | None = None


class Headers(Protocol):
    """What is read of a request's headers (werkzeug's ``Headers``, or a plain dict)."""

    def get(self, key: str, /) -> str | None: ...


def trace_of(headers: Headers, project: str) -> LogContext:
    """The trace fields of a request, from ``traceparent`` or else ``X-Cloud-Trace-Context``.

    Malformed or all-zero ids are ignored, so a header can never put arbitrary text in a log.
    """
    parent = _TRACEPARENT.match((headers.get("traceparent") or "").strip())
    if parent and set(parent[1]) != {"0"} and set(parent[2]) != {"0"}:
        return LogContext(
            trace=f"projects/{project}/traces/{parent[1]}",
            span_id=parent[2],
            sampled=bool(int(parent[3], 16) & 1),
        )
    cloud = _CLOUD_TRACE.match((headers.get("X-Cloud-Trace-Context") or "").strip())
    if cloud and set(cloud[1]) != {"0"}:
        span = int(cloud[2]) if cloud[2] else 0
        return LogContext(
            trace=f"projects/{project}/traces/{cloud[1].lower()}",
            span_id=f"{span:016x}" if 0 < span < 2**64 else None,
            sampled=cloud[3] == "1" if cloud[3] is not None else None,
        )
    return LogContext()


@contextmanager
def request_scope(function: str | None, project: str, headers: Headers) -> Iterator[LogContext]:
    """The log context of one request: its function and trace; cleared when it ends."""
    scope = replace(trace_of(headers, project), function=function)
    token = _context.set(scope)
    try:
        yield scope
    finally:
        _context.reset(token)


@contextmanager
def bind(
    *, org_id: str | None = None, run_id: str | None = None, event_id: str | None = None
) -> Iterator[LogContext]:
    """Add the ids the code has learnt to the current context, until the block ends."""
    scope = _context.get()
    scope = replace(
        scope,
        org_id=scope.org_id if org_id is None else org_id,
        run_id=scope.run_id if run_id is None else run_id,
        event_id=scope.event_id if event_id is None else event_id,
    )
    token = _context.set(scope)
    try:
        yield scope
    finally:
        _context.reset(token)


def error_name(error: BaseException) -> str:
    """``Type: code`` for our errors, ``Type`` otherwise: the traceback's last line, shaped
    as Error Reporting expects (``Type: detail``) without the message."""
    name = type(error).__name__
    return f"{name}: {error.code}" if isinstance(error, ColonyError) else name


def safe_traceback(error: BaseException) -> str:
    """A Python-style traceback of ``error`` and its causes: frames and types, no messages."""
    blocks: list[str] = []
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen and len(blocks) < _MAX_CHAIN:
        seen.add(id(link))
        frames = "".join(traceback.format_tb(link.__traceback__))
        blocks.append(f"Traceback (most recent call last):\n{frames}{error_name(link)}")
        if link.__cause__ is not None:
            blocks.append(_CAUSE)
            link = link.__cause__
        elif link.__context__ is not None and not link.__suppress_context__:
            blocks.append(_CONTEXT)
            link = link.__context__
        else:
            link = None
    if blocks and blocks[-1] in (_CAUSE, _CONTEXT):
        blocks.pop()
    return "\n\n".join(reversed(blocks))


class CloudLoggingFormatter(logging.Formatter):
    """A record as one line of JSON in the shape Cloud Logging reads (structured logging)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            message = f"{message}\n{safe_traceback(error)}"  # record.exc_text may quote it
        scope = _context.get()
        when = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="microseconds")
        entry: dict[str, Any] = {
            "severity": _SEVERITY.get(record.levelno, record.levelname),
            "message": message,
            "time": when.replace("+00:00", "Z"),
            "logger": record.name,
            "function": scope.function or _process_function,
        }
        for name in ("org_id", "run_id", "event_id"):
            value = getattr(scope, name)
            if value is not None:
                entry[name] = value
        if scope.trace is not None:
            entry[TRACE_FIELD] = scope.trace
            if scope.span_id is not None:
                entry[SPAN_FIELD] = scope.span_id
            if scope.sampled is not None:
                entry[SAMPLED_FIELD] = scope.sampled
        entry[SOURCE_FIELD] = {
            "file": record.pathname,
            "line": str(record.lineno),
            "function": record.funcName,
        }
        return json.dumps(entry, ensure_ascii=False, default=str)


class _StderrHandler(logging.Handler):
    """Writes each record to whatever ``sys.stderr`` is at the time (test runners and
    functions-framework may swap it), one line per record, flushed at once."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            stream = sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def configure_logging(function: str | None = None) -> None:
    """Send log records to stderr as Cloud Logging JSON, once per process (idempotent).

    functions-framework leaves the root logger at WARNING with no handler, which drops our
    INFO lines; the ``colony`` loggers are raised to INFO here (other libraries stay at
    WARNING: httpx, for one, logs every URL it fetches at INFO, signed ones included).
    ``function`` names the lines written outside a request; the first name given wins.
    """
    global _handler, _process_function
    with _lock:
        if function and _process_function is None:
            _process_function = function
        if _handler is not None:
            return
        _handler = _StderrHandler()
        _handler.setFormatter(CloudLoggingFormatter())
        logging.getLogger().addHandler(_handler)
        colony = logging.getLogger("colony")
        if colony.level == logging.NOTSET or colony.level > logging.INFO:
            colony.setLevel(logging.INFO)
