"""A ``WebFetcher`` that answers from a dict of pages, for the research runner's tests.

It keeps the real fetcher's rules where they decide an outcome without the network: the
address rules (``AddressGuard``, every name resolving to one public address), the accepted
types and the decoding (``web_body``), robots.txt refusals (``disallowed`` URL prefixes) and
conditional requests. ``tests/conformance/test_web_fetcher.py`` holds it to the real
``PoliteWebFetcher`` on the same cases. ``requested`` lists every URL it answered from its
pages, as a server's log would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx

from colony.adapters.web_body import BINARY_TYPES, PAGE_TYPES, decode, media_type
from colony.adapters.web_guard import AddressGuard, Refused
from colony.ports.clock import Clock
from colony.ports.web import FetchResult

PUBLIC_ADDRESS = "93.184.216.34"


@dataclass(frozen=True, slots=True)
class FakePage:
    body: bytes
    content_type: str | None = "text/html; charset=utf-8"
    status: int = 200
    etag: str | None = None
    last_modified: str | None = None


class FakeWebFetcher:
    """Answers ``pages[url]``; a URL not in ``pages`` is a 404."""

    def __init__(
        self,
        pages: Mapping[str, FakePage] | None = None,
        *,
        disallowed: Iterable[str] = (),
        clock: Clock = lambda: datetime.now(UTC),
    ) -> None:
        self.pages = dict(pages or {})
        self.disallowed = tuple(disallowed)
        self.requested: list[str] = []
        self._clock = clock
        self._guard = AddressGuard(resolver=lambda host, port: [PUBLIC_ADDRESS])

    def fetch(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> FetchResult:
        result = FetchResult(url, url, "bad_url", self._clock())
        try:
            checked = self._guard.check(httpx.URL(url))
        except (httpx.InvalidURL, TypeError) as error:
            return FetchResult(url, url, "bad_url", result.fetched_at, detail=str(error))
        if isinstance(checked, Refused):
            return FetchResult(url, url, checked.outcome, result.fetched_at, detail=checked.detail)
        if url.startswith(self.disallowed):
            return FetchResult(url, url, "robots_disallowed", result.fetched_at)
        self.requested.append(url)
        page = self.pages.get(url, FakePage(b"not found", status=404))
        at = result.fetched_at
        if page.status == 200 and (
            (etag is not None and etag == page.etag)
            or (last_modified is not None and last_modified == page.last_modified)
        ):
            return FetchResult(
                url,
                url,
                "not_modified",
                at,
                status=304,
                etag=page.etag,
                last_modified=page.last_modified,
            )
        if not 200 <= page.status < 300:
            return FetchResult(url, url, "http_error", at, status=page.status)
        kind, charset = media_type(page.content_type)
        if kind not in PAGE_TYPES:
            return FetchResult(url, url, "bad_type", at, status=page.status)
        text, codec = (None, None) if kind in BINARY_TYPES else decode(page.body, kind, charset)
        return FetchResult(
            url,
            url,
            "ok",
            at,
            status=page.status,
            content=page.body,
            text=text,
            content_type=kind,
            charset=codec,
            etag=page.etag,
            last_modified=page.last_modified,
        )
