"""Pub/Sub push functions: ``decode_push`` checks a delivery (base64, JSON, kind, schema, org)
and ``pubsub_handler`` turns a flow into a functions-framework CloudEvent function that
acknowledges what can never succeed (recorded as a rejection) and lets everything else raise
so Pub/Sub retries it."""

from __future__ import annotations

import base64
import binascii
import functools
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import flask

from colony import startup
from colony.deadline import model_window, window_seconds
from colony.errors import CallerError, Unauthorized, describe_validation, error_summary
from colony.observability import logs
from colony.observability.sentry import error_scope
from colony.observability.telemetry import flush_telemetry
from colony.registry.functions import function as registered_function
from colony.registry.functions import topic as registered_topic
from colony.runtime import delivery, redelivery
from colony.runtime.deps import deps
from colony.runtime.edge.invoker import internal_function, require_invoker
from colony.runtime.edge.responses import (
    error_reply,
    gcp_project,
    install_on_current_app,
    is_expected,
    log_expected,
    log_failure,
    reject_constant,
)

if TYPE_CHECKING:
    from colony.contracts.events import Event
    from colony.ports import Rejection, RejectionRecorder
    from colony.settings import Settings

logger = logging.getLogger("colony.runtime")


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
        value = json.loads(blob.decode("utf-8"), parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return problem("not_json", "the message data is not UTF-8 JSON")
    if not isinstance(value, dict):
        return problem("schema_invalid", "the event is not a JSON object")
    org = value.get("org_id")
    claimed = _clip(org) if isinstance(org, str) else claimed
    import pydantic  # lazy: pydantic and the event models load on the first delivery

    from colony.contracts.events import EVENT_ADAPTER  # lazy: (the same)

    try:
        payload = EVENT_ADAPTER.validate_python(value)
    except pydantic.ValidationError as error:
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
        # lazy: the ports' dataclasses load with the first rejection, not at cold start
        from colony.ports import Rejection

        self.rejections.append(Rejection.of(function, event_id, claimed_org_id, reason))


Flow = Callable[[Any, str], object]  # (the validated Event, its event id)
CloudEventFunction = Callable[[Any], None]


@overload
def pubsub_handler(
    function_name: str,
    handle: Flow,
    *,
    recorder: Callable[[], RejectionRecorder] | None = ...,
    config: Callable[[], Settings] | None = ...,
) -> CloudEventFunction: ...
@overload
def pubsub_handler(
    function_name: str,
    *,
    recorder: Callable[[], RejectionRecorder] | None = ...,
    config: Callable[[], Settings] | None = ...,
) -> Callable[[Flow], CloudEventFunction]: ...
def pubsub_handler(
    function_name: str,
    handle: Flow | None = None,
    *,
    recorder: Callable[[], RejectionRecorder] | None = None,
    config: Callable[[], Settings] | None = None,
) -> CloudEventFunction | Callable[[Flow], CloudEventFunction]:
    """Turn ``handle(event, event_id)`` into a functions-framework CloudEvent function.

    ``function_name`` is the registry name (``colony.registry.functions``); it also names the
    function's log lines. Rejections go to ``recorder()`` (default: ``deps().rejections``),
    resolved only when one happens. Every push must carry the invoker's Google OIDC token
    (``colony.runtime.edge.invoker``; not locally), checked against ``config()`` (default:
    ``deps().settings``) before anything is decoded. Telemetry is flushed before the
    invocation returns.
    """
    spec = registered_function(function_name)
    internal_function(function_name)  # every push function is called by Pub/Sub alone
    rejections = recorder or _default_rejections
    settings = config or _settings
    limit = registered_topic(spec.topic).max_delivery_attempts if spec.topic else None
    window = window_seconds(function_name)  # the model calls' share of the function's timeout

    def decorate(flow: Flow) -> CloudEventFunction:
        install_on_current_app(cloud_events=True)
        logs.configure_logging(function_name)
        project = gcp_project()

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
                attempt: delivery.Attempt | None = None
                try:
                    with (
                        error_scope(decoded.org_id, run_id, spec.agent),
                        delivery.attempt(delivery_attempt(cloud_event), limit) as attempt,
                        model_window(window),
                    ):
                        flow(payload, event_id)
                except CallerError as error:
                    _reject(event_id, decoded.org_id, f"{error.code}: {error}")
                except Exception as error:
                    if (
                        spec.topic
                        and redelivery.can_put_back(spec.topic)
                        and redelivery.worth_deferring(error, attempt is not None and attempt.last)
                    ):
                        wait = float(getattr(error, "retry_after", 0.0))
                        task = redelivery.defer(
                            deps().transport, spec.topic, payload, event_id, wait
                        )
                        logger.info(
                            "%s event %s: %s; put back for %.0f s as %s",
                            function_name,
                            event_id,
                            error_summary(error),
                            wait,
                            task,
                        )
                        return  # acknowledged: the task publishes it again when it is time
                    if is_expected(error):
                        log_expected(f"{function_name} event {event_id}", error)
                        flask.abort(error_reply(error))  # non-2xx: Pub/Sub redelivers later
                    log_failure(f"{function_name} event {event_id} failed; retrying", error)
                    raise

        @functools.wraps(flow)
        def entry(cloud_event: Any) -> None:
            headers: logs.Headers = flask.request.headers if flask.has_request_context() else {}
            with logs.request_scope(function_name, project, headers):
                try:
                    refuse_unless_invoker(cloud_event, headers)
                    deliver(cloud_event)
                finally:
                    flush_telemetry()
                    startup.settled()  # the first invocation ends the instance's start-up

        return entry

    def refuse_unless_invoker(cloud_event: Any, headers: logs.Headers) -> None:
        """A push not carrying the invoker's OIDC token runs nothing and writes nothing: it
        is answered 401 JSON, not acknowledged. A real Pub/Sub delivery refused (a config
        mistake) is then redelivered with backoff and dead-lettered after the topic's
        bounded attempts, kept for replay rather than lost; a forger just gets its 401. It
        is not stored in ``rejected_deliveries``: an unauthenticated caller must not be able
        to write rows; the WARNING line is its record."""
        try:
            require_invoker(function_name, headers, settings())
        except Unauthorized as error:
            logger.warning(
                "%s refused a push (event %s) from an unverified caller: %s",
                function_name,
                _clip(_attribute(cloud_event, "id"), 64),
                error,  # one of verify_google_oidc's fixed sentences: never the token
            )
            flask.abort(error_reply(error))

    def _reject(event_id: str | None, org_id: str | None, reason: str) -> None:
        code = reason.split(":", 1)[0]
        logger.warning(
            "%s rejected event %s (claimed org %s): %s", function_name, event_id, org_id, code
        )
        rejections().record(function_name, event_id, org_id, reason)

    return decorate(handle) if handle is not None else decorate


def _default_rejections() -> RejectionRecorder:
    return deps().rejections


def _settings() -> Settings:
    return deps().settings
