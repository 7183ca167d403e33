"""One safe GET of a public page (issue 33 items 2 and 3), answered as a ``FetchResult``.

    SafeFetcher.get(url)
      └─ for each hop (the URL, then at most ``max_redirects`` redirects, ourselves):
           AddressGuard.check      scheme, port, name, every resolved address → Pinned
           before_hop(url)         the caller's say on a redirect (robots, politeness)
           httpcore, pinned        connect to Pinned.ip; Host and TLS name the hostname;
                                   PinnedBackend cuts every socket call at the deadline
           status                  3xx → next hop (re-checked); 304 → not_modified;
                                   2xx → type, then BodyReader up to the cap; else http_error

Why httpcore and not ``httpx.Client``: the client resolves names and follows redirects
itself, and its transport takes no network backend, so neither the pin nor the deadline
could be held there. httpcore is the layer httpx sends through; its ``network_backend`` and
its ``sni_hostname`` request extension are documented public API. The connection pool is one
per hop and keeps nothing alive: a pooled TLS connection must never serve a second hostname.

The web's faults are outcomes, never exceptions: everything httpcore raises is mapped
(``timeout``, ``unreachable``), and nothing the server sends is held beyond the cap.
"""

from __future__ import annotations

import ssl
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import httpcore
import httpx

from colony.adapters.web_body import BINARY_TYPES, PAGE_TYPES, BodyReader, TooLarge, decode
from colony.adapters.web_body import media_type as parse_media_type
from colony.adapters.web_guard import AddressGuard, Pinned, Refused
from colony.adapters.web_wire import PinnedBackend
from colony.ports.clock import Clock
from colony.ports.web import FetchOutcome, FetchResult

PRODUCT = "ColonyResearch"  # the token robots.txt groups are matched on
REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Called before each redirect hop with its URL: None follows it, an outcome ends the fetch
# there (``final_url`` is the hop) with ``detail`` saying why.
BeforeHop = Callable[[str], tuple[FetchOutcome, str] | None]


def user_agent(contact_url: str) -> str:
    """``ColonyResearch/1.0 (+<contact url>)``: the product and where to learn about it."""
    return f"{PRODUCT}/1.0 (+{contact_url})"


@dataclass(frozen=True, slots=True)
class Limits:
    """Per page: the byte cap, socket timeouts, the wall-clock deadline of one request (a
    redirect hop is a request of its own) and the redirect limit."""

    max_bytes: int = 5 * 1024 * 1024
    connect_timeout: float = 10.0
    read_timeout: float = 15.0
    deadline: float = 30.0
    max_redirects: int = 5


@dataclass(slots=True)
class _Hop:
    """What one request came to: the status and headers, and the body if one was read."""

    status: int
    headers: dict[str, str]
    outcome: FetchOutcome | None = None
    content: bytes = b""
    detail: str = ""
    redirect_to: str | None = None


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SafeFetcher:
    """GETs public pages through ``AddressGuard`` (module docstring)."""

    def __init__(
        self,
        user_agent: str,
        *,
        guard: AddressGuard,
        limits: Limits | None = None,
        ssl_context: ssl.SSLContext | None = None,
        clock: Clock = _utc_now,
    ) -> None:
        self._agent = user_agent
        self._guard = guard
        self.limits = limits or Limits()
        self._ssl = ssl_context or httpx.create_ssl_context()
        self.clock = clock

    def refused(self, url: str) -> FetchResult | None:
        """The answer for ``url`` if its first hop is refused (nothing is sent), else None."""
        base = FetchResult(url=url, final_url=url, outcome="bad_url", fetched_at=self.clock())
        try:
            checked = self._guard.check(httpx.URL(url).copy_with(fragment=None))
        except (httpx.InvalidURL, TypeError) as error:
            return replace(base, detail=str(error)[:200])
        if isinstance(checked, Refused):
            return replace(base, outcome=checked.outcome, detail=checked.detail)
        return None

    def get(
        self,
        url: str,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        accept: frozenset[str] | None = PAGE_TYPES,
        max_bytes: int | None = None,
        before_hop: BeforeHop | None = None,
    ) -> FetchResult:
        """Fetch ``url``: ``accept`` the media types read (None: any), ``max_bytes`` the cap
        (default ``limits.max_bytes``), ``etag`` / ``last_modified`` make it conditional."""
        base = FetchResult(url=url, final_url=url, outcome="bad_url", fetched_at=self.clock())
        try:
            current = httpx.URL(url).copy_with(fragment=None)
        except (httpx.InvalidURL, TypeError) as error:
            return replace(base, detail=str(error)[:200])
        headers = [("User-Agent", self._agent), ("Accept", "*/*"), ("Accept-Encoding", "gzip")]
        if etag:
            headers.append(("If-None-Match", etag))
        if last_modified:
            headers.append(("If-Modified-Since", last_modified))
        seen = {str(current)}
        hops: list[str] = []
        while True:
            checked = self._guard.check(current)
            where = replace(base, final_url=str(current), redirects=tuple(hops))
            if isinstance(checked, Refused):
                return replace(where, outcome=checked.outcome, detail=checked.detail)
            hop = self._request(checked, headers, accept, max_bytes or self.limits.max_bytes)
            where = replace(where, status=hop.status or None, fetched_at=self.clock())
            if hop.redirect_to is None:
                return self._result(where, hop, etag, last_modified)
            try:
                following = current.join(hop.redirect_to).copy_with(fragment=None)
            except httpx.InvalidURL as error:
                return replace(where, outcome="bad_url", detail=f"Location: {error}"[:200])
            if str(following) in seen:
                return replace(where, outcome="redirect_loop", detail=f"back to {following}")
            if len(hops) >= self.limits.max_redirects:
                return replace(where, outcome="too_many_redirects", detail=f"{len(hops)} hops")
            hops.append(str(following))
            seen.add(str(following))
            current = following
            stop = before_hop(str(current)) if before_hop else None
            if stop is not None:
                return replace(
                    where,
                    final_url=str(current),
                    redirects=tuple(hops),
                    outcome=stop[0],
                    detail=stop[1],
                )

    def _request(
        self,
        pinned: Pinned,
        headers: list[tuple[str, str]],
        accept: frozenset[str] | None,
        max_bytes: int,
    ) -> _Hop:
        limits = self.limits
        deadline = time.monotonic() + limits.deadline
        pool = httpcore.ConnectionPool(
            ssl_context=self._ssl,
            max_connections=1,
            max_keepalive_connections=0,
            network_backend=PinnedBackend(pinned.ip, deadline),
        )
        target = httpcore.URL(
            scheme=pinned.url.raw_scheme,
            host=pinned.ip.encode("ascii"),
            port=pinned.port,
            target=pinned.url.raw_path,
        )
        extensions: dict[str, object] = {
            "timeout": {
                "connect": limits.connect_timeout,
                "read": limits.read_timeout,
                "write": limits.read_timeout,
                "pool": limits.connect_timeout,
            }
        }
        if pinned.sni is not None:
            extensions["sni_hostname"] = pinned.sni
        try:
            with (
                pool,
                pool.stream(
                    "GET",
                    target,
                    headers=[("Host", pinned.host_header), *headers],
                    extensions=extensions,
                ) as response,
            ):
                return _read(response, accept, max_bytes)
        except httpcore.TimeoutException as error:
            return _Hop(0, {}, "timeout", detail=str(error)[:200] or type(error).__name__)
        except (httpcore.NetworkError, httpcore.ProtocolError, OSError) as error:
            return _Hop(0, {}, "unreachable", detail=str(error)[:200] or type(error).__name__)

    @staticmethod
    def _result(
        where: FetchResult, hop: _Hop, etag: str | None, last_modified: str | None
    ) -> FetchResult:
        kind, charset = parse_media_type(hop.headers.get("content-type"))
        result = replace(
            where,
            outcome=hop.outcome or "ok",
            detail=hop.detail,
            content=hop.content,
            content_type=kind,
            etag=hop.headers.get("etag") or (etag if hop.status == 304 else None),
            last_modified=hop.headers.get("last-modified")
            or (last_modified if hop.status == 304 else None),
        )
        if result.outcome in ("ok", "too_large") and kind not in BINARY_TYPES and hop.content:
            text, codec = decode(hop.content, kind, charset)
            result = replace(result, text=text, charset=codec)
        return result


def _read(response: httpcore.Response, accept: frozenset[str] | None, max_bytes: int) -> _Hop:
    """The hop's answer: a redirect's Location, or the body of a 2xx of an accepted type."""
    headers: dict[str, str] = {}
    for name, value in response.headers:
        headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1").strip())
    status = response.status
    if status in REDIRECTS:
        location = headers.get("location")
        if not location:
            return _Hop(status, headers, "http_error", detail="a redirect without a Location")
        return _Hop(status, headers, redirect_to=location)
    if status == 304:
        return _Hop(status, headers, "not_modified")
    if not 200 <= status < 300:
        return _Hop(status, headers, "http_error", detail=f"HTTP {status}")
    kind, _ = parse_media_type(headers.get("content-type"))
    if accept is not None and kind not in accept:
        return _Hop(status, headers, "bad_type", detail=f"Content-Type {kind!r}")
    length = headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        return _Hop(status, headers, "too_large", detail=f"Content-Length {length}")
    try:
        reader = BodyReader(max_bytes, headers.get("content-encoding"))
    except ValueError as error:
        return _Hop(status, headers, "bad_type", detail=str(error))
    try:
        for chunk in response.iter_stream():
            reader.feed(chunk)
        return _Hop(status, headers, content=reader.finish())
    except TooLarge as cut:
        return _Hop(
            status, headers, "too_large", content=cut.kept, detail=f"over {max_bytes} bytes"
        )
    except zlib.error as error:
        return _Hop(status, headers, "unreachable", detail=f"broken compression: {error}")
