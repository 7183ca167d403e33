"""The open web as the research runner reads it: one polite, safe GET per call.

``WebFetcher.fetch`` never raises for the web's faults: whatever a site does (refuses, loops,
drips, answers 50 MB, resolves to the metadata server), the answer is one ``FetchResult``
whose ``outcome`` names what happened. Only our own faults raise (a database that cannot be
reached while the site's slot is claimed: ``UpstreamError``).

Adapter: ``colony.adapters.polite_web.PoliteWebFetcher`` (robots.txt and the per-site limit
around ``colony.adapters.web.SafeFetcher``); fake: ``colony.testing.web_fetcher``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

FetchOutcome = Literal[
    "ok",  # a 2xx of an accepted type, read whole (``content`` and ``text``)
    "not_modified",  # a 304 to our If-None-Match / If-Modified-Since: the stored copy holds
    "wait",  # the site's slot is taken or too recent: ask again at ``retry_at``
    "robots_disallowed",  # robots.txt refuses ColonyResearch this URL: never requested
    "refused_address",  # a hop's host is, or resolves to, an address we never connect to
    "refused_scheme_or_port",  # not http(s), or not port 80 / 443
    "bad_url",  # not a URL we can request (unparseable, credentials in it)
    "too_large",  # the body passed the byte cap: ``content`` is the first cap bytes
    "timeout",  # connect, read or the page's wall-clock deadline ran out
    "bad_type",  # a Content-Type (or Content-Encoding) we do not read
    "http_error",  # any other status: 4xx, 5xx, a redirect without a Location
    "redirect_loop",  # a redirect back to a URL already visited
    "too_many_redirects",  # more hops than the limit
    "redirected",  # a redirect not followed in this call (another site, or the site's pace):
    # ``final_url`` is where it points; fetch that as a page of its own
    "unreachable",  # no address, no connection, TLS refused, a broken response
]

OK_OUTCOMES: frozenset[str] = frozenset({"ok", "not_modified"})


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What one fetch came to. ``url`` is what was asked for, ``final_url`` the last hop
    tried (after redirects), ``redirects`` every hop after the first, in order.

    ``content`` is the body as received (decompressed, never more than the cap); ``text`` its
    decoded text for the textual types (None for a PDF, or when nothing was read), ``charset``
    the encoding that decoded it. ``etag`` / ``last_modified`` are the validators to send
    next time. ``detail`` says why in a few words (an address refused, a type refused), never
    a page's text."""

    url: str
    final_url: str
    outcome: FetchOutcome
    fetched_at: datetime
    status: int | None = None
    content: bytes = b""
    text: str | None = None
    content_type: str | None = None
    charset: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    redirects: tuple[str, ...] = ()
    detail: str = ""
    retry_at: datetime | None = None  # for ``wait``: not before this

    @property
    def ok(self) -> bool:
        """True for a page read (``ok``) or confirmed unchanged (``not_modified``)."""
        return self.outcome in OK_OUTCOMES


@runtime_checkable
class WebFetcher(Protocol):
    """One GET of a public web page, politely (robots.txt, one request at a time and about
    one a second per site, across instances) and safely (public addresses only, on every
    hop). ``etag`` / ``last_modified`` from a previous fetch make it conditional."""

    def fetch(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> FetchResult:
        """The outcome of fetching ``url``; never raises for what the site did."""
        ...
