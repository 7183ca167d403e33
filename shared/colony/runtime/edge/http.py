"""HTTP functions: ``http_json`` turns a handler of ``JsonRequest`` into a functions-framework
HTTP function that answers JSON (or a stream) and maps every error once
(``colony.runtime.edge.responses``)."""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

import flask
from werkzeug.datastructures import Headers
from werkzeug.wrappers import Response as WerkzeugResponse

from colony import startup
from colony.deadline import model_window, window_seconds
from colony.errors import (
    NotFound,
    ValidationFailed,
    describe_validation,
)
from colony.observability import logs, sentry
from colony.observability.telemetry import flush_telemetry
from colony.registry.functions import FUNCTIONS
from colony.runtime.edge.responses import (
    BadJson,
    MethodNotAllowed,
    UnsupportedMediaType,
    error_reply,
    error_response,
    gcp_project,
    install_on_current_app,
    is_expected,
    json_response,
    log_expected,
    log_failure,
    log_refusal,
    reject_constant,
)

if TYPE_CHECKING:
    import pydantic

logger = logging.getLogger("colony.runtime")
M = TypeVar("M", bound="pydantic.BaseModel")


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
        if self.body is None:
            raise ValidationFailed("a JSON body is required")
        import pydantic  # lazy: loaded with the models it validates, not at cold start

        try:
            parsed = model.model_validate(self.body)
        except pydantic.ValidationError as error:
            raise ValidationFailed(f"invalid body: {describe_validation(error)}") from None
        # A task body names its org (and run): every event of the request says so from here.
        sentry.tag(org_id=getattr(parsed, "org_id", None), run_id=getattr(parsed, "run_id", None))
        return parsed


FORM = "application/x-www-form-urlencoded"


def _read_json(request: flask.Request, *, form: bool = False) -> Any:
    """The JSON body (None when there is none); with ``form``, an HTML form's fields are
    accepted too (a dict of the first value of each)."""
    data = request.get_data(cache=True)
    if not data:
        return None
    mimetype = request.mimetype
    if form and mimetype == FORM:
        return {key: request.form.get(key, "") for key in request.form}
    charset = request.mimetype_params.get("charset", "utf-8").lower()
    if (mimetype != "application/json" and not mimetype.endswith("+json")) or charset not in (
        "utf-8",
        "utf8",
    ):
        raise UnsupportedMediaType("send the body as application/json (UTF-8)")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadJson("the request body is not valid JSON") from None


JsonHandler = Callable[[JsonRequest], Any]
CallerCheck = Callable[[Headers], object]  # raises (e.g. Unauthorized) to refuse a request
HttpFunction = Callable[[flask.Request], WerkzeugResponse]


@overload
def http_json(handler: JsonHandler, /) -> HttpFunction: ...
@overload
def http_json(
    *,
    methods: Sequence[str] = ...,
    paths: Sequence[str] | None = ...,
    caller: CallerCheck | None = ...,
    forms: Sequence[str] = ...,
) -> Callable[[JsonHandler], HttpFunction]: ...
def http_json(
    handler: JsonHandler | None = None,
    /,
    *,
    methods: Sequence[str] = ("POST",),
    paths: Sequence[str] | None = ("/",),
    caller: CallerCheck | None = None,
    forms: Sequence[str] = (),
) -> HttpFunction | Callable[[JsonHandler], HttpFunction]:
    """Turn ``handler(JsonRequest)`` into a functions-framework HTTP function.

    The handler returns a JSON-able value or pydantic model (200), ``(value, status)``, a
    ready ``flask.Response`` (e.g. a stream or redirect), or None (204). Requests outside
    ``methods`` get 405, outside ``paths`` (exact, trailing slash ignored; None: any) 404.
    A body must be ``application/json`` (else 415) and parse (else 400 ``bad_json``); on the
    ``forms`` paths an HTML form body is accepted too (RFC 8058's one-click unsubscribe).
    Authentication is the handler's first line (``colony.runtime.auth``), or ``caller``:
    a check of the request's headers run before anything else, e.g. a Cloud Tasks or
    Scheduler target's ``caller=invoker_only("<name>")`` (``colony.runtime.edge.invoker``:
    the invoker's Google OIDC token, else 401 JSON with nothing read or run).

    Log lines name the function by ``K_SERVICE`` (set by Cloud Run, and by the local servers).
    Sentry events are tagged with the function's agent (from the registry) and, once the
    request names them, its org and run (``parse``, a verified bearer token). Telemetry is
    flushed before the response is returned, or when a streamed one ends.
    """
    allowed = tuple(m.upper() for m in methods)
    routes = None if paths is None else {_normalise_path(p) for p in paths}
    form_paths = {_normalise_path(p) for p in forms}

    def decorate(fn: JsonHandler) -> HttpFunction:
        install_on_current_app()
        name = os.environ.get("K_SERVICE") or None
        logs.configure_logging(name)
        project = gcp_project()
        window = window_seconds(name)  # the model calls' share of the function's timeout
        spec = FUNCTIONS.get(name or "")
        agent = spec.agent if spec is not None else None

        def respond(request: flask.Request) -> WerkzeugResponse:
            path = _normalise_path(request.path)
            try:
                if caller is not None:
                    caller(request.headers)
                if routes is not None and path not in routes:
                    raise NotFound("there is nothing at this path")
                if request.method.upper() not in allowed:
                    raise MethodNotAllowed("this method is not allowed here", allow=allowed)
                req = JsonRequest(
                    method=request.method.upper(),
                    path=path,
                    headers=request.headers,
                    args=request.args,
                    body=_read_json(request, form=path in form_paths),
                    raw=request,
                )
                with sentry.error_scope(None, None, agent), model_window(window):
                    return _to_response(fn(req))
            except Exception as error:
                reply = error_reply(error)
                if is_expected(error):
                    log_expected(f"{request.method} {path}", error)
                elif reply.status_code >= 500:
                    log_failure(f"{request.method} {path} failed", error)
                else:
                    code = error_response(error)[0]["error"]["code"]
                    log_refusal(request.method, path, reply.status_code, code)
                return reply

        @functools.wraps(fn)
        def entry(request: flask.Request) -> WerkzeugResponse:
            try:
                with logs.request_scope(name, project, request.headers):
                    response = respond(request)
                    if response.is_streamed:  # the body is produced after we return
                        response.call_on_close(flush_telemetry)
                    else:
                        flush_telemetry()
            finally:
                startup.settled()  # the first invocation ends the instance's start-up
            return response

        return entry

    return decorate(handler) if handler is not None else decorate


def _normalise_path(path: str) -> str:
    return "/" + path.strip("/")


def _to_response(result: Any) -> WerkzeugResponse:
    if isinstance(result, WerkzeugResponse):
        return result
    if result is None:
        return flask.Response(status=204)
    if isinstance(result, tuple):
        body, status = result
        return json_response(body, int(status))
    return json_response(result)
