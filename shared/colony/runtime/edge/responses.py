"""Errors → HTTP: every failure answered as ``{"error": {"code", "message"}}`` with its status
(``error_response``), the request body cap, the JSON handlers installed on the framework's
app and its server (``install_json_errors``; broken HTTP framing in ``framing``) and the log
lines of refusals and failures (ids, types and codes, never payloads)."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import flask
from cloudevents.exceptions import InvalidRequiredFields, MissingRequiredFields
from cloudevents.http import from_http
from functions_framework import event_conversion
from werkzeug.exceptions import ClientDisconnected, HTTPException, RequestEntityTooLarge
from werkzeug.wrappers import Response as WerkzeugResponse

from colony.error_bodies import INTERNAL_MESSAGE, error_body, public_body
from colony.errors import (
    CallerError,
    ColonyError,
    Conflict,
    Forbidden,
    InternalError,
    NotFound,
    OrgScopeError,
    PayloadTooLarge,
    RateLimited,
    Unauthorized,
    Unprocessable,
    UpstreamError,
    ValidationFailed,
    error_summary,
)
from colony.observability import logs
from colony.observability.sentry import report
from colony.observability.telemetry import flush_telemetry
from colony.runtime.edge.framing import (
    BODY_FRAMING_ERRORS,
    MalformedBody,
    install_framing_replies,
    status_body,
)

if TYPE_CHECKING:
    import pydantic


logger = logging.getLogger("colony.runtime")
M = TypeVar("M", bound="pydantic.BaseModel")


class BadJson(ValidationFailed):
    code = "bad_json"


class UnsupportedMediaType(CallerError):
    code = "unsupported_media_type"


class MethodNotAllowed(CallerError):
    code = "method_not_allowed"

    def __init__(self, message: str, *, allow: Sequence[str]) -> None:
        super().__init__(message)
        self.allow = tuple(allow)


# First match wins: subclasses before their parents.
_STATUS: tuple[tuple[type[ColonyError], int], ...] = (
    (Unauthorized, 401),
    (OrgScopeError, 403),
    (Forbidden, 403),
    (NotFound, 404),
    (MethodNotAllowed, 405),
    (Conflict, 409),
    (PayloadTooLarge, 413),
    (UnsupportedMediaType, 415),
    (Unprocessable, 422),
    (RateLimited, 429),
    (CallerError, 400),
    (InternalError, 500),
    (UpstreamError, 503),
)


def error_response(error: BaseException) -> tuple[dict[str, Any], int]:
    """The JSON error body and HTTP status for ``error``.

    Only ``CallerError`` messages reach the caller (they are written for them); upstream
    failures, our own faults (``InternalError``) and bugs get a fixed sentence, so a
    provider's reply, a setting or a stack trace can never leak.
    """
    if isinstance(error, ColonyError):
        status = next((s for cls, s in _STATUS if isinstance(error, cls)), 500)
        return public_body(error), status
    if isinstance(error, HTTPException) and error.code and 400 <= error.code < 500:
        return status_body(error.code), error.code
    return error_body("internal", INTERNAL_MESSAGE), 500


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> flask.Response:
    if hasattr(body, "model_dump"):  # a pydantic model (pydantic loads on first use)
        body = body.model_dump(mode="json")
    response = flask.Response(
        json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False),
        status=status,
        mimetype="application/json",
    )
    response.headers.update(headers or {})
    return response


def error_reply(error: BaseException) -> flask.Response:
    body, status = error_response(error)
    headers: dict[str, str] = {}
    if isinstance(error, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(error, MethodNotAllowed):
        headers["Allow"] = ", ".join(error.allow)
    if isinstance(error, RateLimited):
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
    # a provider's Retry-After, or the retry a shared limit booked (runtime.limiter.RateWait)
    wait = getattr(error, "retry_after", None) if isinstance(error, UpstreamError) else None
    if wait:
        headers["Retry-After"] = str(max(1, math.ceil(wait)))
    return json_response(body, status, headers)


def log_failure(what: str, error: BaseException) -> None:
    """Log type, code and stack frames — not the message, which might quote a payload.

    One entry: the traceback is part of the message (Cloud Logging keeps a JSON line whole,
    and Error Reporting reads the traceback from it)."""
    traceback = logs.safe_traceback(error)
    logger.error("%s: %s\n%s", what, error_summary(error), traceback, stacklevel=2)
    error._colony_logged = True  # type: ignore[attr-defined]  # so Flask's hook skips it


def log_expected(what: str, error: BaseException) -> None:
    """One WARNING line, no traceback: an expected failure (``ColonyError.expected``)."""
    summary = error_summary(error)
    logger.warning("%s: %s; the platform retries it later", what, summary, stacklevel=2)


def log_refusal(method: str, path: str, status: int, code: str) -> None:
    logger.info("%s %s -> %d %s", method, path, status, code, stacklevel=2)


def is_expected(error: BaseException) -> bool:
    return isinstance(error, ColonyError) and error.expected


def _log_crash(exc_info: Any) -> None:
    """Replaces Flask's ``log_exception``, which would print the exception's message. A crash
    outside our decorators was seen by no ``error_scope`` and no flush: both happen here.

    A caller's fault raised outside our decorators (a malformed body found by the
    framework's hook that reads it after our reply) is a refusal, answered 4xx by
    ``_crash_reply``: one line, no traceback, no report."""
    error = exc_info[1] if isinstance(exc_info, tuple) else None
    if error is None or getattr(error, "_colony_logged", False):
        return
    body, status = error_response(error)
    if status < 500:
        log_refusal(flask.request.method, flask.request.path, status, body["error"]["code"])
    else:
        log_failure(f"{flask.request.method} {flask.request.path} crashed", error)
        report(error)
        flush_telemetry()


# The largest request body any function reads (413 beyond it, before any handler code runs):
# our events, chat turns and webhook notifications are small; transcripts are fetched, not sent.
MAX_BODY_BYTES = 1024 * 1024


ENDED_EARLY = "the request body ended before it was complete"


class CappedRequest(flask.Request):
    """A request whose body, once refused as too large or as malformed, reads as empty from
    then on.

    Malformed is ``framing``'s concern: a chunked body whose framing is broken raises
    gunicorn's parse errors from the read, one cut short werkzeug's ``ClientDisconnected``,
    and a body shorter than its ``Content-Length`` (the client stopped sending) is handed
    over by gunicorn as if it were whole; all become ``MalformedBody``, a 400, instead of a
    crash, a bare ``bad_request`` or a handler reading half a body.

    Reading as empty afterwards is for functions-framework's ``after_request`` hook, which
    reads the body again after our reply: werkzeug would raise the 413 a second time, inside
    Flask's error handling, which logs it as two nested tracebacks for one oversized request.
    Every refusal answers before any handler runs, so nothing takes the empty body for the
    request's.
    """

    _refused = False
    _read = False

    @overload
    def get_data(
        self, cache: bool = True, as_text: Literal[False] = False, parse_form_data: bool = False
    ) -> bytes: ...
    @overload
    def get_data(
        self, cache: bool = True, as_text: Literal[True] = ..., parse_form_data: bool = False
    ) -> str: ...
    def get_data(
        self, cache: bool = True, as_text: bool = False, parse_form_data: bool = False
    ) -> bytes | str:
        if self._refused:
            return "" if as_text else b""
        try:
            data = super().get_data(cache, False, parse_form_data)
        except RequestEntityTooLarge:
            self._refused = True
            raise
        except BODY_FRAMING_ERRORS as error:
            self._refused = True
            raise MalformedBody("the request body's chunked framing is malformed") from error
        except ClientDisconnected as error:  # a chunked body that stops before its last chunk
            self._refused = True
            raise MalformedBody(ENDED_EARLY) from error
        first, self._read = not self._read, True
        if first and not parse_form_data and len(data) < (self.content_length or 0):
            self._refused = True
            raise MalformedBody(ENDED_EARLY)
        return data.decode(errors="replace") if as_text else data


_INSTALLED = "colony.edge"  # app.extensions key: what install_json_errors already did


def install_json_errors(app: flask.Flask, *, cloud_events: bool = False) -> None:
    """Make the app's own errors (unrouted paths, wrong methods, crashes) JSON too, and the
    server's refusals of broken framing (``framing``), and cap request bodies at
    ``MAX_BODY_BYTES``; with ``cloud_events``, refuse a body that functions-framework could
    not turn into a CloudEvent before it tries (``_check_event``).

    ``http_json`` and ``pubsub_handler`` call this when they are applied inside
    functions-framework's ``create_app`` (it loads the source inside an app context), which
    replaces its plain-text crash handler that would echo the exception's text. Idempotent.
    """
    done: set[str] = app.extensions.setdefault(_INSTALLED, set())
    if "errors" not in done:
        app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
        app.request_class = CappedRequest
        app.register_error_handler(HTTPException, _http_exception_reply)
        app.register_error_handler(500, _crash_reply)
        app.log_exception = _log_crash  # type: ignore[method-assign]
        install_framing_replies()
        done.add("errors")
    if cloud_events and "cloud_events" not in done:
        app.before_request(_check_event)
        app.after_request(_read_body)
        done.add("cloud_events")


def install_on_current_app(*, cloud_events: bool = False) -> None:
    if flask.has_app_context():
        install_json_errors(flask.current_app, cloud_events=cloud_events)


def _http_exception_reply(error: HTTPException) -> flask.Response:
    reply = error_reply(error)
    if flask.has_request_context():
        code = error_response(error)[0]["error"]["code"]
        log_refusal(flask.request.method, flask.request.path, reply.status_code, code)
    return reply


def _check_event() -> WerkzeugResponse | None:
    """``before_request`` of CloudEvent apps: answer a JSON 4xx for a body the framework
    would fail to convert, instead of the 500 its conversion would end in (a non-UTF-8 body
    raises ``UnicodeDecodeError``, a JSON array ``TypeError``...).

    The body must be UTF-8 JSON, and it must convert the way functions-framework converts it:
    a CloudEvent (binary or structured), else a Pub/Sub push or background event. A valid
    envelope with bad contents still reaches ``pubsub_handler``, which records it as rejected.
    """
    request = flask.request
    if request.routing_exception is not None or request.method != "POST":
        return None  # the framework's routing answers: JSON 404 / 405
    try:
        data = request.get_data(cache=True)  # too large: 413, through the JSON error handler
    except MalformedBody as error:
        return _refuse(error)
    try:
        if data:
            json.loads(data.decode("utf-8"), parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _refuse(BadJson("the request body is not UTF-8 JSON"))
    try:
        try:
            from_http(request.headers, data)
        except (MissingRequiredFields, InvalidRequiredFields):
            event_conversion.background_event_to_cloud_event(request)
    except HTTPException:
        raise  # e.g. 415 for a body that is not JSON by its content type: answered as JSON
    except Exception:  # the user function has not run: only the conversion can fail here
        return _refuse(CallerError("the request is neither a CloudEvent nor a Pub/Sub push"))
    return None


def _read_body(response: WerkzeugResponse) -> WerkzeugResponse:
    """``after_request`` of CloudEvent apps: read a body nothing read (a wrong method's),
    as functions-framework does for HTTP apps. Left unread, gunicorn drains it after our
    reply, and a malformed one would get a second, unrequested reply on the connection
    (``framing``); read here, it is answered once, 400 ``malformed_body``."""
    flask.request.get_data(cache=True)
    return response


def _refuse(error: CallerError) -> flask.Response:
    reply = error_reply(error)
    log_refusal(flask.request.method, flask.request.path, reply.status_code, error.code)
    return reply


def _crash_reply(error: HTTPException) -> flask.Response:
    original = getattr(error, "original_exception", None) or error
    body, status = error_response(original)
    if status < 500:
        # the caller's fault, found outside our decorators: a too-large body raised again
        # while the server drains it after the reply, a malformed body found by the
        # framework's hook that reads it after our reply
        return error_reply(original)
    # 500 (not 503) is what Pub/Sub and the framework's logging expect of a crash.
    return json_response(body, 500, {"X-Google-Status": "crash"})


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def gcp_project() -> str:
    """The GCP project named in log entries' trace field (as ``Settings.gcp_project``)."""
    for name in ("COLONY_GCP_PROJECT", "GOOGLE_CLOUD_PROJECT"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return "colony-local"
