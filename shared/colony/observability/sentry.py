"""Runtime errors to Sentry, tagged org_id / run_id / agent_id, never with prompt text.

Prompts, transcripts and model answers are customer data. They can reach an error event
through an exception message, a log message, a breadcrumb, a request body, a frame's local
variables or ``sys.argv``, so ``scrub`` keeps an allowlist of event fields and rewrites the
rest: exception values become the type and our error ``code`` (``error_summary``), messages
and breadcrumb text are dropped (but for the fixed title of a reported category,
``colony.observability.categories``), frames lose their variables. Tags are kept.

Tags: ``error_scope`` opens a scope with the ids the caller knows; code that learns one later
in the request (the edge parsing a body that names its org, a verified bearer token) adds it
with ``tag``, so every event of the request carries it.

Without a DSN nothing is initialised: ``init_sentry`` returns False and ``error_scope`` is a
null context that does not even import the SDK.

One failure, one event: the edge reports exceptions through ``error_scope`` (or ``report``)
and also logs them for Cloud Logging, so the SDK's logging integration is told to ignore the
edge's logger; otherwise each failure would add a second, message-less event. Events are
flushed before each invocation returns (``colony.observability.telemetry``).

SDK notes (sentry-sdk 2.x): ``send_default_pii`` is deprecated in favour of
``data_collection`` and passing it at all raises a DeprecationWarning, so it is left unset
(which means off). Auto-enabling integrations are off: they would monkeypatch the OpenAI,
google-genai, httpx, langchain... clients process-wide, and the AI ones exist to capture
prompts. ``sentry_sdk.init`` reads SENTRY_DSN, SENTRY_ENVIRONMENT, SENTRY_RELEASE,
SENTRY_DEBUG and SENTRY_SPOTLIGHT itself; the DSN is always passed explicitly here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from colony.errors import CallerError, ColonyError
from colony.observability.categories import TAG, TITLES
from colony.observability.telemetry import register_flush, unregister_flush

if TYPE_CHECKING:
    from sentry_sdk.transport import Transport

    from colony.settings import Settings

SCRUBBED = "[scrubbed]"

# Top-level event fields that carry no free text from prompts, answers or logs.
_KEPT_FIELDS = frozenset(
    {
        "event_id",
        "timestamp",
        "start_timestamp",
        "level",
        "platform",
        "logger",
        "release",
        "dist",
        "environment",
        "server_name",
        "sdk",
        "tags",
        "fingerprint",
        "modules",
        "transaction",
        "transaction_info",
        "type",
    }
)
_KEPT_CONTEXTS = frozenset({"runtime", "os", "device", "app"})
_TRACE_CONTEXT_KEYS = frozenset({"trace_id", "span_id", "parent_span_id", "op", "status"})
_FRAME_KEYS = frozenset(
    {
        "filename",
        "abs_path",
        "module",
        "function",
        "lineno",
        "colno",
        "in_app",
        "context_line",
        "pre_context",
        "post_context",
        "platform",
    }
)
_BREADCRUMB_KEYS = frozenset({"type", "category", "level", "timestamp"})
# Loggers whose error lines repeat an exception that is reported as an event of its own.
_REPORTING_LOGGERS = ("colony.runtime",)
_ID_TAGS = ("org_id", "run_id", "agent_id")
# True inside an ``error_scope``: only there may ``tag`` write (outside, the current scope is
# the process's own and a tag would outlive the request).
_in_scope: ContextVar[bool] = ContextVar("colony_sentry_scope", default=False)


def _codes(hint: Mapping[str, Any] | None) -> dict[str, str]:
    """Exception type name → our error code, over the whole cause/context chain."""
    codes: dict[str, str] = {}
    exc_info = (hint or {}).get("exc_info")
    error = exc_info[1] if exc_info else None
    seen: set[int] = set()
    while isinstance(error, BaseException) and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ColonyError):
            codes.setdefault(type(error).__name__, error.code)
        error = error.__cause__ or error.__context__
    return codes


def _scrub_stacktrace(stacktrace: Any) -> dict[str, Any] | None:
    if not isinstance(stacktrace, Mapping):
        return None
    frames = [
        {k: v for k, v in frame.items() if k in _FRAME_KEYS}
        for frame in stacktrace.get("frames") or ()
        if isinstance(frame, Mapping)
    ]
    return {"frames": frames}


def _scrub_exception(value: Mapping[str, Any], codes: Mapping[str, str]) -> dict[str, Any]:
    name = str(value.get("type") or "Exception")
    clean: dict[str, Any] = {"type": name}
    if name in codes:
        clean["value"] = f"{name} ({codes[name]})"
    else:
        clean["value"] = name
    if value.get("module"):
        clean["module"] = value["module"]
    mechanism = value.get("mechanism")
    if isinstance(mechanism, Mapping):
        clean["mechanism"] = {
            k: mechanism[k]
            for k in (
                "type",
                "handled",
                "exception_id",
                "parent_id",
                "source",
                "is_exception_group",
            )
            if k in mechanism
        }
    stacktrace = _scrub_stacktrace(value.get("stacktrace"))
    if stacktrace is not None:
        clean["stacktrace"] = stacktrace
    return clean


def scrub_breadcrumb(crumb: Any, hint: Any = None) -> Any:
    """Keep a breadcrumb's kind and time; drop its message and data."""
    if not isinstance(crumb, Mapping):
        return None
    return {k: v for k, v in crumb.items() if k in _BREADCRUMB_KEYS}


def _scrub_url(url: Any) -> str | None:
    if not isinstance(url, str):
        return None
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))


def _title(event: Mapping[str, Any]) -> str | None:
    """A reported category's fixed title, when that is all the event's message says."""
    tags = event.get("tags")
    title = TITLES.get(str(tags.get(TAG))) if isinstance(tags, Mapping) else None
    entry = event.get("logentry")
    texts = {event.get("message")}
    if isinstance(entry, Mapping):
        texts |= {entry.get("message"), entry.get("formatted")}
        if entry.get("params"):
            return None
    texts.discard(None)
    return title if title is not None and texts == {title} else None


def scrub(event: Any, hint: Any = None) -> Any:
    """``before_send``: an allowlisted copy of the event with no prompt or transcript text."""
    if not isinstance(event, Mapping):
        return event
    clean: dict[str, Any] = {k: v for k, v in event.items() if k in _KEPT_FIELDS}

    exception = event.get("exception")
    if isinstance(exception, Mapping):
        codes = _codes(hint if isinstance(hint, Mapping) else None)
        clean["exception"] = {
            "values": [
                _scrub_exception(value, codes)
                for value in exception.get("values") or ()
                if isinstance(value, Mapping)
            ]
        }

    if "message" in event or "logentry" in event:
        clean["message"] = _title(event) or SCRUBBED

    threads = event.get("threads")
    if isinstance(threads, Mapping):
        clean["threads"] = {
            "values": [
                {
                    **{k: t[k] for k in ("id", "name", "crashed", "current", "main") if k in t},
                    **(
                        {"stacktrace": st}
                        if (st := _scrub_stacktrace(t.get("stacktrace"))) is not None
                        else {}
                    ),
                }
                for t in threads.get("values") or ()
                if isinstance(t, Mapping)
            ]
        }

    breadcrumbs = event.get("breadcrumbs")
    if isinstance(breadcrumbs, Mapping):
        clean["breadcrumbs"] = {
            "values": [scrub_breadcrumb(c) for c in breadcrumbs.get("values") or ()]
        }

    contexts = event.get("contexts")
    if isinstance(contexts, Mapping):
        kept = {k: v for k, v in contexts.items() if k in _KEPT_CONTEXTS}
        trace = contexts.get("trace")
        if isinstance(trace, Mapping):
            kept["trace"] = {k: v for k, v in trace.items() if k in _TRACE_CONTEXT_KEYS}
        clean["contexts"] = kept

    request = event.get("request")
    if isinstance(request, Mapping):
        clean["request"] = {
            k: v
            for k, v in (("method", request.get("method")), ("url", _scrub_url(request.get("url"))))
            if v
        }
    return clean


def init_sentry(settings: Settings, *, transport: Transport | None = None) -> bool:
    """Initialise Sentry when ``SENTRY_DSN`` is set; return whether it was."""
    if not settings.sentry_dsn:
        return False
    # lazy: sentry_sdk loads only when SENTRY_DSN is set
    import sentry_sdk

    sentry_sdk.init(
        dsn=settings.sentry_dsn,
        environment=settings.env,
        transport=transport,
        include_local_variables=False,
        max_request_body_size="never",
        auto_enabling_integrations=False,
        before_send=scrub,
        before_breadcrumb=scrub_breadcrumb,
        before_send_transaction=scrub,
        traces_sample_rate=None,
        enable_logs=False,
    )
    # lazy: sentry_sdk loads only when SENTRY_DSN is set
    from sentry_sdk.integrations.logging import ignore_logger

    for name in _REPORTING_LOGGERS:
        ignore_logger(name)
    register_flush(flush_sentry)
    return True


def flush_sentry(timeout: float) -> None:
    """Send the queued events, waiting at most ``timeout`` seconds."""
    sentry_sdk = sys.modules.get("sentry_sdk")
    if sentry_sdk is not None and sentry_sdk.get_client().is_active():
        sentry_sdk.flush(timeout=timeout)


def shutdown_sentry() -> None:
    """Flush and close the client, and leave the SDK inactive (for tests and shutdown)."""
    unregister_flush(flush_sentry)
    sentry_sdk = sys.modules.get("sentry_sdk")
    if sentry_sdk is None:
        return
    sentry_sdk.get_client().close()
    sentry_sdk.get_global_scope().set_client(None)


def _reportable(error: BaseException) -> bool:
    """Our faults (``InternalError``), upstream failures and bugs; not a caller's mistake,
    nor an expected retry."""
    if isinstance(error, ColonyError) and error.expected:
        return False
    return not isinstance(error, CallerError)


def report(error: BaseException) -> None:
    """Report ``error`` (if reportable) when Sentry is active: a failure no scope saw."""
    sentry_sdk = sys.modules.get("sentry_sdk")
    if sentry_sdk is not None and sentry_sdk.get_client().is_active() and _reportable(error):
        sentry_sdk.capture_exception(error)


@contextmanager
def error_scope(
    org_id: str | None, run_id: str | None, agent_id: str | None, *, capture: bool = True
) -> Iterator[None]:
    """Tag every Sentry event raised inside with org_id, run_id and agent_id.

    With ``capture`` an exception escaping the block is reported inside the scope (so it
    carries the tags; the SDK's dedupe drops a second report of the same exception further
    up) and re-raised unchanged. A ``CallerError`` is not a runtime error and is not
    reported (an ``InternalError``, ours to fix, is); nor is an expected failure
    (``ColonyError.expected``, e.g. a step busy with a duplicate delivery).
    """
    sentry_sdk = sys.modules.get("sentry_sdk")
    if sentry_sdk is None or not sentry_sdk.get_client().is_active():
        yield
        return
    with sentry_sdk.new_scope() as scope:
        for name, value in zip(_ID_TAGS, (org_id, run_id, agent_id), strict=True):
            if value is not None:
                scope.set_tag(name, value)
        token = _in_scope.set(True)
        try:
            yield
        except Exception as error:
            if capture and _reportable(error):
                sentry_sdk.capture_exception(error)
            raise
        finally:
            _in_scope.reset(token)


def tag(
    *, org_id: str | None = None, run_id: str | None = None, agent_id: str | None = None
) -> None:
    """Add ids learnt during a request to the innermost ``error_scope``'s tags (no-op outside
    one, or without Sentry), so the events reported from here on carry them."""
    sentry_sdk = sys.modules.get("sentry_sdk")
    if not _in_scope.get() or sentry_sdk is None or not sentry_sdk.get_client().is_active():
        return
    scope = sentry_sdk.get_current_scope()
    for name, value in zip(_ID_TAGS, (org_id, run_id, agent_id), strict=True):
        if isinstance(value, str) and value:
            scope.set_tag(name, value[:200])
