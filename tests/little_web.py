"""A minimal web for the fetch tests: one HTTP server on 127.0.0.1 whose answers a test sets
per (host, path), recording what arrived when and how many were in flight at once.

Deliberately small (the stand-in web of ``colony.testing.web_server`` is another engineer's,
and richer): a responder is a function writing the whole answer on the handler.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpcore
import pytest

from colony.adapters.web import Limits, SafeFetcher, user_agent
from colony.adapters.web_guard import AddressGuard, Resolver
from colony.env_values import ResearchWeb
from colony.testing.serving import ServingThread

Responder = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Arrival:
    host: str
    path: str
    headers: dict[str, str]
    at: float  # monotonic, when the request line arrived
    ended: float = 0.0
    sni: str | None = None


@dataclass
class Record:
    arrivals: list[Arrival] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    bytes_sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def paths(self) -> list[str]:
        return [a.path for a in self.arrivals]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    web: LittleWeb


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    timeout = 10

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return

    def do_GET(self) -> None:
        web = self.server.web  # type: ignore[attr-defined]
        record: Record = web.record
        host = (self.headers.get("Host") or "").lower()
        sni = getattr(self.connection, "sni", None)
        arrival = Arrival(host, self.path, dict(self.headers.items()), time.monotonic(), sni=sni)
        with record.lock:
            record.arrivals.append(arrival)
            record.in_flight += 1
            record.most_in_flight = max(record.most_in_flight, record.in_flight)
        try:
            responder = web.routes.get((host, self.path)) or web.routes.get(("*", self.path))
            if responder is None:
                page(b"not here", status=404)(self)
            else:
                responder(self)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError):
            pass  # the client stopped reading: what a cap or a deadline does
        finally:
            with record.lock:
                record.in_flight -= 1
                arrival.ended = time.monotonic()


class LittleWeb:
    """``routes[(host or "*", path)] = responder``; ``local(hosts)`` is the guard's map."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.routes: dict[tuple[str, str], Responder] = {}
        self.record = Record()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.web = self
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*tls)
            context.sni_callback = _remember_sni
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._serving = ServingThread(self._server, "little-web")

    connections: list[tuple[str, int]]  # set by ``fenced``: every connection attempted

    def local(self, *hosts: str) -> ResearchWeb:
        return ResearchWeb("127.0.0.1", self.port, frozenset(hosts))

    def close(self) -> None:
        self._serving.close()


def _remember_sni(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: object) -> None:
    sock.sni = name  # type: ignore[union-attr]


def page(
    body: bytes,
    content_type: str | None = "text/html",
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
) -> Responder:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        if delay:
            time.sleep(delay)
        handler.send_response(status)
        if content_type:
            handler.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return respond


def redirect(location: str, status: int = 302) -> Responder:
    return page(b"", None, status=status, headers={"Location": location})


def endless(chunk: bytes, every: float = 0.0, web: LittleWeb | None = None) -> Responder:
    """A 200 whose body never ends: ``chunk`` after ``chunk``, ``every`` seconds apart."""

    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()
        for _ in range(100_000):
            handler.wfile.write(chunk)
            handler.wfile.flush()
            if web is not None:
                web.record.bytes_sent += len(chunk)
            if every:
                time.sleep(every)

    return respond


def dripping_headers(every: float) -> Responder:
    """A status line, then a header one byte at a time, forever."""

    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.0 200 OK\r\nX-Slow: ")
        for _ in range(10_000):
            handler.wfile.write(b"a")
            handler.wfile.flush()
            time.sleep(every)

    return respond


def only_loopback(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connection the fetch attempts; any but 127.0.0.1 is refused here, so no test
    reaches past this machine, whatever the code under test gets wrong."""
    attempts: list[tuple[str, int]] = []
    real = httpcore.SyncBackend.connect_tcp

    def connect_tcp(
        self: httpcore.SyncBackend, host: str, port: int, *args: object, **kwargs: object
    ) -> httpcore.NetworkStream:
        attempts.append((host, port))
        if host != "127.0.0.1":
            raise httpcore.ConnectError(f"test: no connection to {host} leaves this machine")
        return real(self, host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpcore.SyncBackend, "connect_tcp", connect_tcp)
    return attempts


AGENT = user_agent("https://colony.example/research")
HOSTS = ("acme.example", "www.acme.example", "other.example")


def fenced(monkeypatch: pytest.MonkeyPatch) -> Iterator[LittleWeb]:
    """A test's ``web`` fixture: a ``LittleWeb`` whose ``connections`` lists every connection
    the code under test attempted, any but to 127.0.0.1 refused (``only_loopback``)."""
    connections = only_loopback(monkeypatch)
    server = LittleWeb()
    server.connections = connections
    yield server
    server.close()


def safe_fetcher(
    local: ResearchWeb | None, resolver: Resolver | None = None, **limits: float
) -> SafeFetcher:
    """A ``SafeFetcher`` with the test's stand-in map, resolver and limits."""
    guard = (
        AddressGuard(local=local)
        if resolver is None
        else AddressGuard(local=local, resolver=resolver)
    )
    return SafeFetcher(AGENT, guard=guard, limits=Limits(**limits))  # type: ignore[arg-type]


class Answers:
    """A resolver that answers from a script (the last answer again once it runs out),
    counting the questions."""

    def __init__(self, *answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        return self.answers[min(len(self.asked), len(self.answers)) - 1]
