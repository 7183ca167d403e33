"""The wire stand-in's HTTP server: ``WireServer`` on 127.0.0.1, and ``ProviderServer``, the
base of the third-party REST stand-ins (Drive, Notion).

Every request is recorded (method, path, headers, parsed JSON body). Each request is answered
by the next scripted reply if any is queued (``script``, ``fail``), else by the default
responder of the route it matches, else with a 404. With no ``routes`` given, a
``WireServer`` speaks the model APIs (``DEFAULT_ROUTES``: the ``openai`` and ``gemini``
routes); more endpoints are one more ``Route`` each (``routes=`` or ``add_route``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import parse_qs, urlsplit

from colony.testing.serving import ServingThread
from colony.testing.wire import gemini, openai
from colony.testing.wire.replies import (
    NO_ANSWER,
    RecordedRequest,
    Reply,
    Route,
    Scripted,
    error_reply,
)

DEFAULT_ROUTES: tuple[Route, ...] = openai.ROUTES + gemini.ROUTES


class WireServerError(RuntimeError):
    """A responder raised while the server was answering a request."""


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

    def setup(self) -> None:
        super().setup()
        # As a real API's server: a streamed event is sent when written, not held by Nagle's
        # algorithm for the client's delayed ACK (~40 ms on loopback).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        wire = cast(_HTTPServer, self.server).wire
        reply = wire._dispatch(self.command, self.path, headers, raw)
        if reply.status == NO_ANSWER:  # the connection closes with nothing sent
            self.close_connection = True
            return
        if reply.events is not None:
            self._stream(reply, wire)
            return
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

    def _stream(self, reply: Reply, wire: WireServer) -> None:
        """Write ``reply.events`` one by one, paced (HTTP/1.0: the close ends the body)."""
        first = wire.first_delay if reply.first_delay is None else reply.first_delay
        gap = wire.gap if reply.gap is None else reply.gap
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.flush()
            for i, event in enumerate(reply.events or ()):
                delay = first if i == 0 else gap
                if delay > 0:  # the model's pace, not synchronisation
                    time.sleep(delay)
                self.wfile.write(event)
                self.wfile.flush()
        except ConnectionError:
            self.close_connection = True  # the client stopped reading

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
        self._serving: ServingThread | None = None
        self.first_delay = 0.0  # streamed replies: seconds to the first event (``pace``)
        self.gap = 0.0  # and between the later ones

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("WireServer already started")
        self._httpd = _HTTPServer(self)
        self._serving = ServingThread(self._httpd, "colony-wire-server")
        return self

    def close(self) -> None:
        """Stop serving, join the handler threads and close the listening socket."""
        serving, self._httpd, self._serving = self._serving, None, None
        if serving is not None:
            serving.close()

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

    def pace(self, first_delay: float, gap: float) -> None:
        """Stream every reply that does not set its own pace like a model: ``first_delay``
        seconds to the first event (time to first token), ``gap`` between the others."""
        self.first_delay, self.gap = first_delay, gap

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
