"""The edge of every deployed function: JSON over HTTP, Pub/Sub push decoding, error → status
mapping, and one composition root per process.

HTTP functions wrap a handler with ``http_json``; Pub/Sub functions wrap a flow with
``pubsub_handler``. Both map errors the same way (``error_response``), and every error body is
``{"error": {"code": "<snake_case>", "message": "<sentence>"}}`` — never HTML, never a
traceback, never an exception's text unless it is one of our caller-facing messages.

Pub/Sub acknowledges any 2xx and redelivers on anything else, so ``pubsub_handler`` answers:

- a delivery that can never succeed (not base64, not JSON, unknown kind, schema-invalid, no
  org) or a flow's ``CallerError``: recorded in ``rejected_deliveries`` and acknowledged;
- an ``UpstreamError``, an ``InternalError`` (ours to fix: config, template, budget) or any
  other exception: re-raised, so functions-framework answers 500 and Pub/Sub retries (then
  dead-letters after its bounded attempts). Nothing is swallowed. The flow runs knowing its
  delivery attempt (``colony.runtime.delivery``), so it can record a failure before the last
  one gives up;
- an expected failure (``ColonyError.expected``: a duplicate delivery finding its step busy):
  503, so Pub/Sub redelivers it later, once the first delivery has stored the step's output;
- a request that is no delivery at all (not UTF-8 JSON, neither a CloudEvent nor a push, too
  large): a JSON 4xx before the framework tries to convert it (``install_json_errors``).

Logs carry ids, error types and codes (``error_summary``), never payloads or messages that
might quote one. Both decorators configure Cloud Logging's JSON lines when the function module
loads (``colony.observability.logs``), tag every line of a request with its function, trace and
(for events) org, run and event ids, and flush queued telemetry (Langfuse spans, Sentry events)
before the invocation returns: Cloud Functions may throttle the CPU once the response is sent.
An expected failure (``ColonyError.expected``, e.g. a duplicate delivery finding its step busy)
is one WARNING line, not an error with a traceback, and is still answered non-2xx so the
platform retries it later.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import flask
from werkzeug.datastructures import Headers
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.wrappers import Response as WerkzeugResponse

from colony.contracts.common import describe_validation
from colony.errors import (
    INTERNAL_MESSAGE,
    CallerError,
    ColonyError,
    Conflict,
    InternalError,
    NotFound,
    OrgScopeError,
    ProviderUnavailable,
    Unauthorized,
    UpstreamError,
    ValidationFailed,
    error_body,
    error_summary,
    public_body,
)
from colony.observability import logs
from colony.observability.sentry import error_scope, report
from colony.observability.telemetry import flush_telemetry
from colony.ports import Rejection, RejectionRecorder
from colony.registry.functions import function as registered_function
from colony.registry.functions import topic as registered_topic
from colony.runtime import delivery

if TYPE_CHECKING:
    import pydantic

    from colony.contracts.events import Event

logger = logging.getLogger("colony.runtime")

M = TypeVar("M", bound="pydantic.BaseModel")


# ----------------------------------------------------------------------------- errors → HTTP


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
    (NotFound, 404),
    (MethodNotAllowed, 405),
    (Conflict, 409),
    (UnsupportedMediaType, 415),
    (CallerError, 400),
    (InternalError, 500),
    (UpstreamError, 503),
)
_HTTP_MESSAGES = {
    400: "the request could not be understood",
    404: "there is nothing at this path",
    405: "this method is not allowed here",
    413: "the request body is too large",
    415: "the request body must be JSON",
}


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
        code = (error.name or "bad request").lower().replace(" ", "_").replace("'", "")
        return error_body(code, _HTTP_MESSAGES.get(error.code, error.name)), error.code
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


def _error_reply(error: BaseException) -> flask.Response:
    body, status = error_response(error)
    headers: dict[str, str] = {}
    if isinstance(error, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(error, MethodNotAllowed):
        headers["Allow"] = ", ".join(error.allow)
    if isinstance(error, ProviderUnavailable) and error.retry_after:
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
    return json_response(body, status, headers)


def _log_failure(what: str, error: BaseException) -> None:
    """Log type, code and stack frames — not the message, which might quote a payload.

    One entry: the traceback is part of the message (Cloud Logging keeps a JSON line whole,
    and Error Reporting reads the traceback from it)."""
    traceback = logs.safe_traceback(error)
    logger.error("%s: %s\n%s", what, error_summary(error), traceback, stacklevel=2)
    error._colony_logged = True  # type: ignore[attr-defined]  # so Flask's hook skips it


def _log_expected(what: str, error: BaseException) -> None:
    """One WARNING line, no traceback: an expected failure (``ColonyError.expected``)."""
    summary = error_summary(error)
    logger.warning("%s: %s; the platform retries it later", what, summary, stacklevel=2)


def _log_refusal(method: str, path: str, status: int, code: str) -> None:
    logger.info("%s %s -> %d %s", method, path, status, code, stacklevel=2)


def _expected(error: BaseException) -> bool:
    return isinstance(error, ColonyError) and error.expected


def _log_crash(exc_info: Any) -> None:
    """Replaces Flask's ``log_exception``, which would print the exception's message. A crash
    outside our decorators was seen by no ``error_scope`` and no flush: both happen here."""
    error = exc_info[1] if isinstance(exc_info, tuple) else None
    if error is not None and not getattr(error, "_colony_logged", False):
        _log_failure(f"{flask.request.method} {flask.request.path} crashed", error)
        report(error)
        flush_telemetry()


# The largest request body any function reads (413 beyond it, before any handler code runs):
# our events, chat turns and webhook notifications are small; transcripts are fetched, not sent.
MAX_BODY_BYTES = 1024 * 1024


class CappedRequest(flask.Request):
    """A request whose body, once refused as too large, reads as empty from then on.

    functions-framework's ``after_request`` hook reads the body again after our 413 reply;
    werkzeug would raise the 413 a second time, inside Flask's error handling, which logs it
    as two nested tracebacks for one oversized request.
    """

    _refused = False

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
            if as_text:
                return super().get_data(cache, True, parse_form_data)
            return super().get_data(cache, False, parse_form_data)
        except RequestEntityTooLarge:
            self._refused = True
            raise


_INSTALLED = "colony.edge"  # app.extensions key: what install_json_errors already did


def install_json_errors(app: flask.Flask, *, cloud_events: bool = False) -> None:
    """Make the app's own errors (unrouted paths, wrong methods, crashes) JSON too, and cap
    request bodies at ``MAX_BODY_BYTES``; with ``cloud_events``, refuse a body that
    functions-framework could not turn into a CloudEvent before it tries (``_check_event``).

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
        done.add("errors")
    if cloud_events and "cloud_events" not in done:
        app.before_request(_check_event)
        done.add("cloud_events")


def _install_on_current_app(*, cloud_events: bool = False) -> None:
    if flask.has_app_context():
        install_json_errors(flask.current_app, cloud_events=cloud_events)


def _http_exception_reply(error: HTTPException) -> flask.Response:
    reply = _error_reply(error)
    if flask.has_request_context():
        code = error_response(error)[0]["error"]["code"]
        _log_refusal(flask.request.method, flask.request.path, reply.status_code, code)
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
    data = request.get_data(cache=True)  # too large: 413, through the JSON error handler
    try:
        if data:
            json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _refuse(BadJson("the request body is not UTF-8 JSON"))
    from cloudevents.exceptions import InvalidRequiredFields, MissingRequiredFields
    from cloudevents.http import from_http
    from functions_framework import event_conversion

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


def _refuse(error: CallerError) -> flask.Response:
    reply = _error_reply(error)
    _log_refusal(flask.request.method, flask.request.path, reply.status_code, error.code)
    return reply


def _crash_reply(error: HTTPException) -> flask.Response:
    original = getattr(error, "original_exception", None) or error
    if isinstance(original, HTTPException) and original.code and original.code < 500:
        # e.g. a too-large body raised again while the server drains it after the reply
        return _error_reply(original)
    body, _ = error_response(original)
    # 500 (not 503) is what Pub/Sub and the framework's logging expect of a crash.
    return json_response(body, 500, {"X-Google-Status": "crash"})


# ----------------------------------------------------------------------------- HTTP functions


@dataclass(frozen=True)
class JsonRequest:
    """What an HTTP handler sees: the method, normalised path, headers and the JSON body."""

    method: str
    path: str
    headers: Headers  # case-insensitive
    args: Mapping[str, str]
    body: Any  # the parsed JSON value; None when the request had no body
    raw: flask.Request

    @property
    def authorization(self) -> str | None:
        return self.headers.get("Authorization")

    def parse(self, model: type[M]) -> M:
        """Validate the body into ``model``; failures name fields, never echo values."""
        from pydantic import ValidationError

        if self.body is None:
            raise ValidationFailed("a JSON body is required")
        try:
            return model.model_validate(self.body)
        except ValidationError as error:
            raise ValidationFailed(f"invalid body: {describe_validation(error)}") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read_json(request: flask.Request) -> Any:
    data = request.get_data(cache=True)
    if not data:
        return None
    mimetype = request.mimetype
    charset = request.mimetype_params.get("charset", "utf-8").lower()
    if (mimetype != "application/json" and not mimetype.endswith("+json")) or charset not in (
        "utf-8",
        "utf8",
    ):
        raise UnsupportedMediaType("send the body as application/json (UTF-8)")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadJson("the request body is not valid JSON") from None


JsonHandler = Callable[[JsonRequest], Any]
HttpFunction = Callable[[flask.Request], WerkzeugResponse]


@overload
def http_json(handler: JsonHandler, /) -> HttpFunction: ...
@overload
def http_json(
    *, methods: Sequence[str] = ..., paths: Sequence[str] | None = ...
) -> Callable[[JsonHandler], HttpFunction]: ...
def http_json(
    handler: JsonHandler | None = None,
    /,
    *,
    methods: Sequence[str] = ("POST",),
    paths: Sequence[str] | None = ("/",),
) -> HttpFunction | Callable[[JsonHandler], HttpFunction]:
    """Turn ``handler(JsonRequest)`` into a functions-framework HTTP function.

    The handler returns a JSON-able value or pydantic model (200), ``(value, status)``, a
    ready ``flask.Response`` (e.g. a stream or redirect), or None (204). Requests outside
    ``methods`` get 405, outside ``paths`` (exact, trailing slash ignored; None: any) 404.
    A body must be ``application/json`` (else 415) and parse (else 400 ``bad_json``).
    Authentication is the handler's first line (``colony.runtime.auth``).

    Log lines name the function by ``K_SERVICE`` (set by Cloud Run, and by the local servers).
    Telemetry is flushed before the response is returned, or when a streamed one ends.
    """
    allowed = tuple(m.upper() for m in methods)
    routes = None if paths is None else {_normalise_path(p) for p in paths}

    def decorate(fn: JsonHandler) -> HttpFunction:
        _install_on_current_app()
        name = os.environ.get("K_SERVICE") or None
        logs.configure_logging(name)
        project = _project()

        def respond(request: flask.Request) -> WerkzeugResponse:
            path = _normalise_path(request.path)
            try:
                if routes is not None and path not in routes:
                    raise NotFound("there is nothing at this path")
                if request.method.upper() not in allowed:
                    raise MethodNotAllowed("this method is not allowed here", allow=allowed)
                req = JsonRequest(
                    method=request.method.upper(),
                    path=path,
                    headers=request.headers,
                    args=request.args,
                    body=_read_json(request),
                    raw=request,
                )
                with error_scope(None, None, None):
                    return _to_response(fn(req))
            except Exception as error:
                reply = _error_reply(error)
                if _expected(error):
                    _log_expected(f"{request.method} {path}", error)
                elif reply.status_code >= 500:
                    _log_failure(f"{request.method} {path} failed", error)
                else:
                    code = error_response(error)[0]["error"]["code"]
                    _log_refusal(request.method, path, reply.status_code, code)
                return reply

        @functools.wraps(fn)
        def entry(request: flask.Request) -> WerkzeugResponse:
            with logs.request_scope(name, project, request.headers):
                response = respond(request)
                if response.is_streamed:  # the body is produced after we return
                    response.call_on_close(flush_telemetry)
                else:
                    flush_telemetry()
            return response

        return entry

    return decorate(handler) if handler is not None else decorate


def _normalise_path(path: str) -> str:
    return "/" + path.strip("/")


def _project() -> str:
    """The GCP project named in log entries' trace field (as ``Settings.gcp_project``)."""
    for name in ("COLONY_GCP_PROJECT", "GOOGLE_CLOUD_PROJECT"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return "colony-local"


def _to_response(result: Any) -> WerkzeugResponse:
    if isinstance(result, WerkzeugResponse):
        return result
    if result is None:
        return flask.Response(status=204)
    if isinstance(result, tuple):
        body, status = result
        return json_response(body, int(status))
    return json_response(result)


# ----------------------------------------------------------------------------- Pub/Sub push


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a delivery can never be processed: a snake_case code and a short detail."""

    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded push. ``org_id`` is verified when ``payload`` is set, merely claimed if not."""

    event_id: str | None
    org_id: str | None
    payload: Event | None
    attributes: Mapping[str, str] = field(default_factory=dict)
    problem: Problem | None = None


_TAG_ERRORS = {"union_tag_invalid", "union_tag_not_found"}
_MAX_ID = 200


def decode_push(cloud_event: Any) -> Decoded:
    """Decode a functions-framework CloudEvent carrying a Pub/Sub message into an ``Event``.

    Bad deliveries come back with ``problem`` set (never raised): they cannot succeed on
    retry. Accepts Eventarc's ``messagePublished`` events and raw push bodies (which the
    framework converts to the same shape).
    """
    data = getattr(cloud_event, "data", None)
    message = data.get("message") if isinstance(data, Mapping) else None
    if not isinstance(message, Mapping):
        event_id = _clip(_attribute(cloud_event, "id"))
        return Decoded(event_id, None, None, {}, Problem("bad_envelope", "no Pub/Sub message"))
    event_id = _clip(
        _attribute(cloud_event, "id")
        or _text(message.get("messageId"))
        or _text(message.get("message_id"))
    )
    raw_attributes = message.get("attributes")
    attributes = {
        str(k): str(v)
        for k, v in (raw_attributes.items() if isinstance(raw_attributes, Mapping) else ())
        if isinstance(k, str) and isinstance(v, str)
    }
    claimed = _clip(attributes.get("org_id"))

    def problem(code: str, detail: str, org: str | None = claimed) -> Decoded:
        return Decoded(event_id, org, None, attributes, Problem(code, detail))

    if not event_id:
        return problem("no_event_id", "the delivery has no event or message id")
    raw = message.get("data")
    if not isinstance(raw, str) or not raw:
        return problem("no_data", "the message has no data")
    try:
        blob = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return problem("not_base64", "the message data is not base64")
    try:
        value = json.loads(blob.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return problem("not_json", "the message data is not UTF-8 JSON")
    if not isinstance(value, dict):
        return problem("schema_invalid", "the event is not a JSON object")
    org = value.get("org_id")
    claimed = _clip(org) if isinstance(org, str) else claimed
    from pydantic import ValidationError

    from colony.contracts.events import EVENT_ADAPTER  # pydantic models load on first event

    try:
        payload = EVENT_ADAPTER.validate_python(value)
    except ValidationError as error:
        issues = error.errors(include_url=False, include_input=False)
        if any(e["type"] in _TAG_ERRORS for e in issues):
            return problem("unknown_kind", "the event kind is not one we know", claimed)
        if any(e["loc"][-1:] == ("org_id",) for e in issues):
            return problem("missing_org", "the event carries no org_id", claimed)
        return problem("schema_invalid", describe_validation(error), claimed)
    if not payload.org_id.strip():
        return problem("missing_org", "the event carries a blank org_id", claimed)
    if attributes.get("org_id", payload.org_id) != payload.org_id:
        return problem("org_mismatch", "the attributes and the event name different orgs")
    return Decoded(event_id, payload.org_id, payload, attributes, None)


def delivery_attempt(cloud_event: Any) -> int | None:
    """Pub/Sub's ``deliveryAttempt`` for this push (1-based), None when it did not say.

    functions-framework drops it when it turns a raw push body into a CloudEvent, so the
    request body (still cached on the current request) is read too."""
    data = getattr(cloud_event, "data", None)
    value = data.get("deliveryAttempt") if isinstance(data, Mapping) else None
    if value is None and flask.has_request_context():
        body = flask.request.get_json(force=True, silent=True)
        value = body.get("deliveryAttempt") if isinstance(body, Mapping) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def _attribute(cloud_event: Any, name: str) -> str | None:
    try:
        return _text(cloud_event[name])
    except (KeyError, TypeError, IndexError):
        return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _clip(value: str | None, limit: int = _MAX_ID) -> str | None:
    return value[:limit] if value else None


class MemoryRejections:
    """The in-memory ``RejectionRecorder`` fake: keeps what was recorded, in order, as
    ``DbRejections`` stores it (``Rejection.of``)."""

    def __init__(self) -> None:
        self.rejections: list[Rejection] = []

    def record(
        self, function: str, event_id: str | None, claimed_org_id: str | None, reason: str
    ) -> None:
        self.rejections.append(Rejection.of(function, event_id, claimed_org_id, reason))


Flow = Callable[[Any, str], object]  # (the validated Event, its event id)
CloudEventFunction = Callable[[Any], None]


@overload
def pubsub_handler(
    function_name: str, handle: Flow, *, recorder: Callable[[], RejectionRecorder] | None = ...
) -> CloudEventFunction: ...
@overload
def pubsub_handler(
    function_name: str, *, recorder: Callable[[], RejectionRecorder] | None = ...
) -> Callable[[Flow], CloudEventFunction]: ...
def pubsub_handler(
    function_name: str,
    handle: Flow | None = None,
    *,
    recorder: Callable[[], RejectionRecorder] | None = None,
) -> CloudEventFunction | Callable[[Flow], CloudEventFunction]:
    """Turn ``handle(event, event_id)`` into a functions-framework CloudEvent function.

    ``function_name`` is the registry name (``colony.registry.functions``); it also names the
    function's log lines. Rejections go to ``recorder()`` (default: ``deps().rejections``),
    resolved only when one happens. Telemetry is flushed before the invocation returns.
    """
    spec = registered_function(function_name)
    rejections = recorder or _default_rejections
    limit = registered_topic(spec.topic).max_delivery_attempts if spec.topic else None

    def decorate(flow: Flow) -> CloudEventFunction:
        _install_on_current_app(cloud_events=True)
        logs.configure_logging(function_name)
        project = _project()

        def deliver(cloud_event: Any) -> None:
            decoded = decode_push(cloud_event)
            if decoded.problem is not None or decoded.payload is None or not decoded.event_id:
                problem = decoded.problem or Problem("undecodable", "no event")
                with logs.bind(event_id=decoded.event_id):
                    _reject(decoded.event_id, decoded.org_id, str(problem))
                return
            payload = decoded.payload
            run_id = getattr(payload, "run_id", None)
            if run_id is None and payload.kind == "handoff":
                run_id = payload.envelope.parent_run_id
            event_id = decoded.event_id
            with logs.bind(org_id=decoded.org_id, run_id=run_id, event_id=event_id):
                try:
                    with (
                        error_scope(decoded.org_id, run_id, spec.agent),
                        delivery.attempt(delivery_attempt(cloud_event), limit),
                    ):
                        flow(payload, event_id)
                except CallerError as error:
                    _reject(event_id, decoded.org_id, f"{error.code}: {error}")
                except Exception as error:
                    if _expected(error):
                        _log_expected(f"{function_name} event {event_id}", error)
                        flask.abort(_error_reply(error))  # non-2xx: Pub/Sub redelivers later
                    _log_failure(f"{function_name} event {event_id} failed; retrying", error)
                    raise

        @functools.wraps(flow)
        def entry(cloud_event: Any) -> None:
            headers: logs.Headers = flask.request.headers if flask.has_request_context() else {}
            with logs.request_scope(function_name, project, headers):
                try:
                    deliver(cloud_event)
                finally:
                    flush_telemetry()

        return entry

    def _reject(event_id: str | None, org_id: str | None, reason: str) -> None:
        code = reason.split(":", 1)[0]
        logger.warning(
            "%s rejected event %s (claimed org %s): %s", function_name, event_id, org_id, code
        )
        rejections().record(function_name, event_id, org_id, reason)

    return decorate(handle) if handle is not None else decorate


def _default_rejections() -> RejectionRecorder:
    from colony.runtime.deps import deps

    return deps().rejections
