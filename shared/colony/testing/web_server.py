"""The stand-in web (issue 33 item 6): one HTTP server on 127.0.0.1 answering for many
hostnames, told apart by ``Host`` (virtual hosts), counting what reached it.

What it serves (``colony.testing.web``): generated company sites (``add_company``; the demo's
with ``colony.testing.web.demo.add_demo_companies``), the public job boards of Greenhouse,
Lever and Ashby under their real hostnames, and the hard cases (``colony.testing.web.cases``,
added at ``start``). Every answer carries ``ETag`` and ``Last-Modified``; ``If-None-Match``
(else ``If-Modified-Since``) that still holds gets a 304.

How a fetcher reaches it: ``hosts`` maps every served hostname to 127.0.0.1, and
``research_setting()`` is ``COLONY_RESEARCH_WEB``'s value (docs/research.md, "Resolving
names"): connect to ``address`` for those hostnames, on port 80 of an ``http://`` URL. The
stand-in speaks plain HTTP, one request per connection (HTTP/1.0).

What it counts (``requests``, ``counters()``): every request (host, target, headers, arrival
time); per host, how many, the most in flight at once and the shortest gap between two
arrivals (politeness); requests for a path the host's own robots.txt disallows for
``ColonyResearch`` (robots violations, whatever the User-Agent); and requests a correct
fetcher never sends: an IP literal as ``Host`` (``127.0.0.1:<port>``, ``169.254.169.254``) or
a hostname in ``forbidden`` (refused addresses, answered with ``REFUSED_BODY``).

Realism (``Realism``: latency, 5xx errors, slow pages, robots refusals, all drawn from the
seed; ``colony.testing.web.realism``) is off by default, so tests are answered at once. A
responder that raises is answered with a 500 and re-raised by ``__exit__``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, Unpack, cast
from urllib.parse import urlsplit

from colony.testing.serving import ServingThread
from colony.testing.web.boards import JobBoards
from colony.testing.web.cases import hard_cases
from colony.testing.web.pages import Page, Robots, Site, not_modified
from colony.testing.web.realism import Fate, Realism, fate, refuses_robots
from colony.testing.web.sites import Company, Facts, company, company_sites
from colony.testing.web.traffic import (
    Traffic,
    WebCounters,
    WebRequest,
    host_of,
    is_ip_literal,
)

__all__ = ["Realism", "WebCounters", "WebRequest", "WebServer"]

DEFAULT_FORBIDDEN = frozenset({"localhost", "metadata.google.internal", "metadata"})
REFUSED_BODY = b"colony stand-in: a refused address answered; a correct fetcher never asks"


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    block_on_close = True
    request_queue_size = 64  # the benchmark's parallel fetchers connect at once

    def __init__(self, web: WebServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.web = web


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection; a close ends a streamed body
    server_version = "colony-web/1"
    timeout = 10  # bounds a client that sends nothing, or stops reading a long body

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        web = cast(_HTTPServer, self.server).web
        headers = {name.lower(): value for name, value in self.headers.items()}
        request, page, delay = web._arrive(self.command, self.path, headers)
        sent = 0
        try:
            if delay > 0 and web._closing.wait(delay):  # the page's latency, not a sync
                return
            sent = self._send(web, request, page)
        except OSError:  # the client gave up (reset, broken pipe, or our send timed out)
            self.close_connection = True
        finally:
            web._traffic.leave(request, page.status, sent)

    def _send(self, web: WebServer, request: WebRequest, page: Page) -> int:
        self.send_response(page.status)
        if page.status != 304:
            self.send_header("Content-Type", page.content_type)
        self.send_header("ETag", page.tag)
        self.send_header("Last-Modified", format_datetime(page.last_modified, usegmt=True))
        length = page.stream.length if page.stream is not None else len(page.body)
        if length is not None and page.status != 304:
            self.send_header("Content-Length", str(length))
        for name, value in page.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if request.method == "HEAD" or page.status == 304:
            return 0
        if page.stream is None:
            self.wfile.write(page.body)
            return len(page.body)
        return self._stream(web, page)

    def _stream(self, web: WebServer, page: Page) -> int:
        """Write the stream's chunks, paced; stop at its length, its limit or our close."""
        stream = page.stream
        assert stream is not None
        started, sent = time.monotonic(), 0
        for index, chunk in enumerate(stream.chunks()):
            if index and stream.gap > 0 and web._closing.wait(stream.gap):
                break
            if web._closing.is_set() or time.monotonic() - started > stream.limit:
                break
            piece = chunk if stream.length is None else chunk[: stream.length - sent]
            self.wfile.write(piece)
            sent += len(piece)
            if stream.length is not None and sent >= stream.length:
                break
        return sent

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read ``WebServer.requests`` instead of stderr


class WebServer:
    """The stand-in web on 127.0.0.1; use as a context manager.

    Args:
        seed: everything generated (filler content, realism draws) follows from it.
        realism: latency, errors, slow pages and robots refusals; ``None`` (the default)
            answers at once.
        forbidden: hostnames a correct fetcher never asks for (counted as refused addresses).
        drip_gap, drip_limit: never-ends.example writes a byte every ``drip_gap`` seconds and
            gives up after ``drip_limit`` seconds.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        realism: Realism | None = None,
        forbidden: Iterable[str] = DEFAULT_FORBIDDEN,
        drip_gap: float = 0.5,
        drip_limit: float = 30.0,
    ) -> None:
        self.seed, self.realism = seed, realism
        self.forbidden = frozenset(host_of(host) for host in forbidden)
        self.drip_gap, self.drip_limit = drip_gap, drip_limit
        self.companies: dict[str, Company] = {}
        self._boards = JobBoards()
        self._sites: dict[str, Site] = {site.host: site for site in self._boards.sites()}
        self._lock = threading.Lock()  # guards the sites; ``_traffic`` guards itself
        self._closing = threading.Event()
        self._traffic = Traffic()
        self.handler_errors: list[BaseException] = []
        self._httpd: _HTTPServer | None = None
        self._serving: ServingThread | None = None

    # -- content ------------------------------------------------------------------------------

    def add_company(self, domain: str, name: str, **facts: Unpack[Facts]) -> Company:
        """A generated site for ``domain`` (and ``www.`` + it) with the facts planted, e.g.
        ``news=[("2026-11-02", "Mercy Ridge opens two new clinics", body)]``,
        ``jobs=[("Revenue Cycle Manager", "2026-11-20")]``; see ``colony.testing.web.sites``."""
        found = company(host_of(domain), name, seed=self.seed, **facts)
        with self._lock:
            for site in company_sites(found):
                self._sites[site.host] = site
            self._boards.add(found.board)
            self.companies[found.domain] = found
        return found

    def add_site(self, site: Site) -> None:
        """Serve a hand-made site (replacing any site of that hostname)."""
        with self._lock:
            self._sites[host_of(site.host)] = site

    def robots_for(self, host: str) -> Robots | None:
        """The robots.txt ``host`` serves, realism's refusal included (``None``: a 404)."""
        site = self._sites.get(host_of(host))
        if site is None or site.robots is None:
            return None
        if site.generated and refuses_robots(self.realism, self.seed, site.host):
            return site.robots.refusing()
        return site.robots

    def fate(self, host: str, target: str, attempt: int = 0) -> Fate:
        """What realism does to the ``attempt``-th request (from 0) for ``target`` on ``host``."""
        return fate(self.realism, self.seed, host_of(host), target, attempt)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("WebServer already started")
        self._closing.clear()
        self._httpd = _HTTPServer(self)
        with self._lock:
            for site in hard_cases(self.port, self.drip_gap, self.drip_limit):
                self._sites[site.host] = site
        self._serving = ServingThread(self._httpd, "colony-web-server")
        return self

    def close(self) -> None:
        """Stop serving: paced answers end at once, handler threads are joined."""
        serving, self._httpd, self._serving = self._serving, None, None
        if serving is not None:
            self._closing.set()
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
        if exc_type is None and self.handler_errors:
            first = self.handler_errors[0]
            raise RuntimeError(f"a stand-in site raised: {first!r}") from first

    # -- addresses ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("WebServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def hosts(self) -> dict[str, str]:
        """Every served hostname → 127.0.0.1 (the hard cases' once started)."""
        with self._lock:
            return {host: "127.0.0.1" for host in sorted(self._sites)}

    def research_setting(self) -> str:
        """``COLONY_RESEARCH_WEB``: ``{"address": "127.0.0.1:PORT", "hosts": [...]}``."""
        return json.dumps({"address": self.address, "hosts": list(self.hosts)})

    # -- inspection ---------------------------------------------------------------------------

    @property
    def requests(self) -> list[WebRequest]:
        """Every request so far, in arrival order."""
        return self._traffic.requests

    def requests_to(self, host: str) -> list[WebRequest]:
        return [request for request in self.requests if request.host == host_of(host)]

    def counters(self) -> WebCounters:
        return self._traffic.counters()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no request is being answered (False if ``timeout`` passed first)."""
        return self._traffic.wait_idle(timeout)

    def reset(self) -> None:
        """Forget recorded requests and counters (realism's attempt counts included)."""
        self._traffic.reset()

    # -- serving (handler threads) --------------------------------------------------------------

    def _arrive(
        self, method: str, raw: str, headers: Mapping[str, str]
    ) -> tuple[WebRequest, Page, float]:
        """Record the request; the page to answer it with and the latency before it."""
        parts = urlsplit(raw)
        host = host_of(parts.netloc or headers.get("host", ""))
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        refused = is_ip_literal(host) or host in self.forbidden
        site, robots = self._sites.get(host), self.robots_for(host)
        request = WebRequest(
            method,
            host,
            target,
            dict(headers),
            refused_address=refused,
            unknown_host=site is None and not refused,
            robots_violation=robots is not None and robots.disallows(target),
        )
        attempt = self._traffic.arrive(request)
        try:
            return (request, *self._answer(request, site, robots, attempt))
        except Exception as error:  # surfaced by __exit__ / handler_errors
            self.handler_errors.append(error)
            return request, Page(f"{error!r}".encode(), "text/plain", 500), 0.0

    def _answer(
        self, request: WebRequest, site: Site | None, robots: Robots | None, attempt: int
    ) -> tuple[Page, float]:
        if request.method not in ("GET", "HEAD"):
            return Page(b"", "text/plain", 405, {"Allow": "GET, HEAD"}), 0.0
        if request.refused_address:
            return Page(REFUSED_BODY, "text/plain"), 0.0
        if site is None:
            return Page(b"no such site here", "text/plain", 421), 0.0
        page = site.page(request.target, robots)
        drawn = self.fate(request.host, request.target, attempt)
        if drawn.error is not None:
            page = Page(b"<h1>Temporarily unavailable</h1>", status=drawn.error)
        elif page.status == 200 and not_modified(page, request.headers):
            page = Page(status=304, modified=page.last_modified, etag=page.tag)
        return page, drawn.delay
