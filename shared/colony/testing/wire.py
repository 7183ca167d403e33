"""A local HTTP server that speaks just enough of the OpenAI and Gemini wire protocols.

Point the official SDKs at it (``openai.OpenAI(base_url=server.openai_base_url)``,
``genai.Client(http_options=HttpOptions(base_url=server.gemini_base_url))``) and they make
real HTTP requests to 127.0.0.1. Every request is recorded (method, path, headers, parsed JSON
body). Each request is answered by the next scripted reply if any is queued (``script``,
``fail``), else by the default responder of the route it matches, else with a 404.

Routes spoken today:

* OpenAI ``POST /v1/embeddings``
* OpenAI ``POST /v1/chat/completions``
* Gemini Developer API ``POST /{v1beta|v1|v1alpha}/models/{model}:batchEmbedContents``
  (what ``google-genai``'s ``client.models.embed_content`` sends, for one text or many)
* Gemini Developer API ``POST /{v1beta|v1|v1alpha}/models/{model}:generateContent``
  (``google-genai`` 3.x sends ``v1`` unless told otherwise)

More endpoints are one more ``Route`` each: append to ``DEFAULT_ROUTES`` or pass ``routes=`` /
call ``add_route``.

Default embeddings are deterministic, derived from the text and the requested dimension, and
deliberately NOT unit length (see ``fake_vector``), so callers' normalisation is exercised.
Default chat answers are JSON built from the request's schema (``sample_from_schema``): valid
for the schema, not meaningful. Script a specific answer with ``openai_chat_reply`` /
``gemini_content_reply`` (``Reply`` objects in the real response shapes).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import parse_qs, urlsplit

OPENAI_DEFAULT_DIM = 1536
GEMINI_DEFAULT_DIM = 3072

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


@dataclass(frozen=True, slots=True)
class Reply:
    """What to send back. ``body`` is JSON-encoded unless it is ``bytes``."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


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


class WireServerError(RuntimeError):
    """A responder raised while the server was answering a request."""


def fake_vector(text: str, dim: int) -> list[float]:
    """``dim`` deterministic components in [-2, 2) derived from SHA-256 of ``text``.

    Not unit length (the expected norm is about ``sqrt(dim * 4 / 3)``).
    """
    values: list[float] = []
    block = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{block}\x00{text}".encode()).digest()
        values += [word / 2**30 - 2.0 for (word,) in struct.iter_unpack("<I", digest)]
        block += 1
    return values[:dim]


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


def openai_embeddings(request: RecordedRequest) -> Reply:
    """Default answer to OpenAI ``POST /v1/embeddings``."""
    body = request.body if isinstance(request.body, dict) else {}
    raw = body.get("input")
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not inputs:
        return error_reply(400, "'input' must be a non-empty string or array")
    texts = [item if isinstance(item, str) else json.dumps(item) for item in inputs]
    dim = body.get("dimensions") or OPENAI_DEFAULT_DIM
    if not isinstance(dim, int) or dim <= 0:
        return error_reply(400, "'dimensions' must be a positive integer")
    encoding = body.get("encoding_format") or "float"
    data: list[dict[str, Any]] = []
    for index, text in enumerate(texts):
        vector = fake_vector(text, dim)
        embedding: list[float] | str = vector
        if encoding == "base64":
            embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(len(text.split()) for text in texts)
    return Reply(
        200,
        {
            "object": "list",
            "data": data,
            "model": body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        },
    )


def gemini_batch_embed_contents(request: RecordedRequest) -> Reply:
    """Default answer to Gemini ``POST /v1beta/models/{model}:batchEmbedContents``."""
    body = request.body if isinstance(request.body, dict) else {}
    items = body.get("requests")
    if not isinstance(items, list) or not items:
        return error_reply(400, "'requests' must be a non-empty array")
    expected_model = f"models/{request.params.get('model', '')}"
    embeddings: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("model") != expected_model:
            return error_reply(400, f"requests[{i}].model must be {expected_model!r}")
        parts = (item.get("content") or {}).get("parts") or []
        text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
        dim = item.get("outputDimensionality") or GEMINI_DEFAULT_DIM
        if not isinstance(dim, int) or dim <= 0:
            return error_reply(400, f"requests[{i}].outputDimensionality must be positive")
        embeddings.append({"values": fake_vector(text, dim)})
    return Reply(200, {"embeddings": embeddings})


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    node: Any = root
    for key in ref.removeprefix("#/").split("/"):
        node = node[key]
    return node


def sample_from_schema(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A small deterministic value valid for ``schema`` (JSON Schema or Gemini's OpenAPI kind).

    Objects get every property (null where null is allowed), arrays ``minItems`` items,
    strings ``"x"`` repeated to ``minLength``, numbers their ``minimum`` (or 0), enums their
    first value. Enough for answers that parse and validate; not meant to be meaningful.
    """
    root = schema if root is None else root
    if "$ref" in schema:
        return sample_from_schema(_resolve_ref(schema["$ref"], root), root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    options = schema.get("anyOf") or schema.get("oneOf") or schema.get("any_of")
    if options:
        for option in options:
            if str(option.get("type", "")).lower() == "null":
                return None
        return sample_from_schema(options[0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        if "null" in kind or schema.get("nullable"):
            return None
        kind = kind[0] if kind else None
    if schema.get("nullable"):
        return None
    kind = str(kind).lower() if kind is not None else ("object" if "properties" in schema else "")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: sample_from_schema(sub, root) for name, sub in properties.items()}
    if kind == "array":
        items = schema.get("items") or {}
        return [sample_from_schema(items, root) for _ in range(int(schema.get("minItems") or 0))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if schema.get("format") == "date":
        return "2024-01-01"
    if schema.get("format") == "date-time":
        return "2024-01-01T00:00:00Z"
    return "x" * max(1, int(schema.get("minLength") or 1))


def _words(value: Any) -> int:
    """A deterministic stand-in for a token count: whitespace-separated words."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(_words(v) for v in value.values())
    if isinstance(value, list):
        return sum(_words(v) for v in value)
    return 0


def openai_chat_reply(
    content: str | None,
    *,
    model: str = "gpt-test",
    prompt_tokens: int = 0,
    completion_tokens: int | None = None,
    tool_calls: Iterable[tuple[str, Mapping[str, Any]]] = (),
    finish_reason: str | None = None,
) -> Reply:
    """A ``chat.completion`` object answering with ``content`` and/or ``(name, args)`` calls."""
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(dict(arguments))},
        }
        for i, (name, arguments) in enumerate(tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    completion = _words(content) if completion_tokens is None else completion_tokens
    return Reply(
        200,
        {
            "id": "chatcmpl-wire",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion,
            },
        },
    )


def openai_chat_completions(request: RecordedRequest) -> Reply:
    """Default answer to OpenAI ``POST /v1/chat/completions``: JSON sampled from the schema."""
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not body.get("model"):
        return error_reply(400, "'model' and a non-empty 'messages' array are required")
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if isinstance(schema, dict):
        content = json.dumps(sample_from_schema(schema))
    elif response_format.get("type") == "json_object":
        content = "{}"
    else:
        content = "ok"
    return openai_chat_reply(
        content,
        model=str(body["model"]),
        prompt_tokens=sum(_words(m.get("content")) for m in messages if isinstance(m, dict)),
    )


def gemini_content_reply(
    text: str | None,
    *,
    model_version: str = "gemini-test",
    prompt_tokens: int = 0,
    candidates_tokens: int | None = None,
    function_calls: Iterable[tuple[str, Mapping[str, Any]]] = (),
    finish_reason: str = "STOP",
) -> Reply:
    """A ``GenerateContentResponse`` answering with ``text`` and/or ``(name, args)`` calls."""
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"text": text})
    parts += [{"functionCall": {"name": name, "args": dict(args)}} for name, args in function_calls]
    candidates = candidates_tokens if candidates_tokens is not None else _words(text)
    return Reply(
        200,
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": finish_reason,
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt_tokens,
                "candidatesTokenCount": candidates,
                "totalTokenCount": prompt_tokens + candidates,
            },
            "modelVersion": model_version,
            "responseId": "wire-response",
        },
    )


def gemini_generate_content(request: RecordedRequest) -> Reply:
    """Default answer to Gemini ``POST /{version}/models/{model}:generateContent``."""
    body = request.body if isinstance(request.body, dict) else {}
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return error_reply(400, "'contents' must be a non-empty array")
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if isinstance(schema, dict):
        text = json.dumps(sample_from_schema(schema))
    elif config.get("responseMimeType") == "application/json":
        text = "{}"
    else:
        text = "ok"
    prompt = [body.get("systemInstruction") or {}, *contents]
    return gemini_content_reply(
        text,
        model_version=request.params.get("model", ""),
        prompt_tokens=sum(
            _words(p.get("text")) for c in prompt for p in (c.get("parts") or []) if "text" in p
        ),
    )


def gemini_count_tokens(request: RecordedRequest) -> Reply:
    """Default answer to Gemini ``POST /{version}/models/{model}:countTokens``: one token per
    whitespace-separated word, so tests can predict it."""
    body = request.body if isinstance(request.body, dict) else {}
    contents = body.get("contents")
    if not isinstance(contents, list):
        return error_reply(400, "'contents' must be an array")
    words = sum(_words(p.get("text")) for c in contents for p in (c.get("parts") or []))
    return Reply(body={"totalTokens": words})


DEFAULT_ROUTES: tuple[Route, ...] = (
    Route.of("openai.embeddings", "POST", r"/v1/embeddings", openai_embeddings),
    Route.of("openai.chat.completions", "POST", r"/v1/chat/completions", openai_chat_completions),
    Route.of(
        "gemini.batchEmbedContents",
        "POST",
        r"/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):batchEmbedContents",
        gemini_batch_embed_contents,
    ),
    Route.of(
        "gemini.generateContent",
        "POST",
        r"/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):generateContent",
        gemini_generate_content,
    ),
    Route.of(
        "gemini.countTokens",
        "POST",
        r"/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+):countTokens",
        gemini_count_tokens,
    ),
)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    block_on_close = True

    def __init__(self, wire: WireServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.wire = wire


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers at close
    server_version = "colony-wire/1"
    timeout = 10  # a client that connects and sends nothing cannot hang close()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        wire = cast(_HTTPServer, self.server).wire
        reply = wire._dispatch(self.command, self.path, headers, raw)
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            names = {name.lower() for name in reply.headers}
            if "content-type" not in names:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except ConnectionError:
            self.close_connection = True  # the client gave up (e.g. its timeout): nobody to tell

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read ``WireServer.requests`` instead of stderr


class WireServer:
    """Local stand-in for the OpenAI and Gemini HTTP APIs; use as a context manager."""

    def __init__(self, routes: Iterable[Route] | None = None) -> None:
        self._routes: list[Route] = list(DEFAULT_ROUTES if routes is None else routes)
        self._lock = threading.Lock()
        self._script: deque[Scripted] = deque()
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("WireServer already started")
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # bounds how long close() waits for the loop
            name="colony-wire-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, join the handler threads and close the listening socket."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
        if exc_type is None and self._errors:
            raise WireServerError(f"a responder raised: {self._errors[0]!r}") from self._errors[0]

    # -- addresses ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("WireServer is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """For ``openai.OpenAI(base_url=...)``: the SDK appends ``/embeddings`` etc."""
        return f"{self.base_url}/v1"

    @property
    def gemini_base_url(self) -> str:
        """For ``HttpOptions(base_url=...)``: the SDK appends ``/v1/models/...`` (its default)."""
        return self.base_url

    # -- scripting ----------------------------------------------------------------------------

    def add_route(self, route: Route) -> None:
        """Add a route; it is tried before the existing ones."""
        with self._lock:
            self._routes.insert(0, route)

    def script(self, *replies: Scripted) -> None:
        """Answer the next requests, in order, with these (a ``Reply`` or a responder)."""
        with self._lock:
            self._script.extend(replies)

    def fail(
        self,
        status: int,
        *,
        times: int = 1,
        message: str | None = None,
        retry_after_ms: int | None = 1,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Answer the next ``times`` requests with an error ``status``.

        ``retry_after_ms`` sends ``retry-after-ms`` and ``Retry-After`` (whole seconds, rounded
        up) so SDKs that honour them retry at once; ``None`` sends neither. The OpenAI SDK
        ignores a zero delay (it falls back to its own back-off), hence the default of 1 ms.
        """
        all_headers = dict(headers or {})
        if retry_after_ms is not None:
            all_headers.setdefault("retry-after-ms", str(retry_after_ms))
            all_headers.setdefault("Retry-After", str(-(-retry_after_ms // 1000)))
        self.script(*[error_reply(status, message, headers=all_headers)] * times)

    @property
    def pending(self) -> int:
        """How many scripted replies have not been used yet."""
        with self._lock:
            return len(self._script)

    # -- inspection ---------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, route: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.route == route]

    @property
    def handler_errors(self) -> list[BaseException]:
        with self._lock:
            return list(self._errors)

    def reset(self) -> None:
        """Forget recorded requests, scripted replies and handler errors."""
        with self._lock:
            self._requests.clear()
            self._script.clear()
            self._errors.clear()

    # -- serving (handler threads) --------------------------------------------------------------

    def _dispatch(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> Reply:
        parts = urlsplit(target)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            matched = next(
                (
                    (route, found)
                    for route in self._routes
                    if route.method == method and (found := route.pattern.fullmatch(parts.path))
                ),
                None,
            )
            request = RecordedRequest(
                method=method,
                path=parts.path,
                query=parse_qs(parts.query),
                headers=dict(headers),
                body=body,
                raw_body=raw,
                route=matched[0].name if matched else None,
                params=matched[1].groupdict() if matched else {},
            )
            self._requests.append(request)
            scripted = self._script.popleft() if self._script else None
        try:
            if isinstance(scripted, Reply):
                return scripted
            if scripted is not None:
                return scripted(request)
            if matched is None:
                return error_reply(404, f"no route for {method} {parts.path}")
            return matched[0].respond(request)
        except Exception as error:  # surfaced by __exit__ / handler_errors
            with self._lock:
                self._errors.append(error)
            return error_reply(500, f"responder raised {type(error).__name__}: {error}")


class ProviderServer(WireServer):
    """Base of the third-party REST stand-ins (Drive, Notion): bearer-token checks and scripted
    429s, both in the provider's own error shape.

    A subclass names that shape once: ``provider_error(status, code, message)`` plus the
    ``(code, message)`` pairs of its 401 (``unauthorised``) and 429 (``rate_limited``)."""

    unauthorised: tuple[str, str]
    rate_limited: tuple[str, str]

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return self.base_url

    def rate_limit(self, times: int = 1, retry_after: int = 1) -> None:
        """Answer the next ``times`` requests with 429 and ``Retry-After: retry_after``."""
        reply = self.provider_error(429, *self.rate_limited)
        self.script(*[Reply(429, reply.body, {"Retry-After": str(retry_after)})] * times)

    def _authorised(self, request: RecordedRequest) -> Reply | None:
        """The 401 for a request without ``Authorization: Bearer ...``, else ``None``."""
        if not (request.header("authorization") or "").startswith("Bearer "):
            return self.provider_error(401, *self.unauthorised)
        return None
