"""The research runner's ``WebFetcher``: robots.txt and the per-site pace around one
``SafeFetcher`` (issue 33 item 2).

Politeness is held in PostgreSQL, not in a process, so it holds however many instances run
(``colony.store.research.sites``). One call of ``fetch`` is one *visit* to a site:

1. robots.txt for the URL's origin is read from the database when fresh; a URL it refuses
   is answered ``robots_disallowed`` without claiming anything or sending a request;
2. the site's slot is claimed (one statement). Taken, or too soon after the last request:
   the answer is ``wait`` with ``retry_at``, at once, without sleeping: the caller (a Cloud
   Task) schedules itself again for then;
3. holding the slot, the visit makes its requests one after another, each at least the gap
   after the one before (``gap``, or the robots.txt Crawl-delay if larger): robots.txt if
   it was stale, then the page, then each redirect hop on the same site, whose origin's
   robots.txt is checked (and fetched, if it is not known) like the first. A gap of up to
   ``inline_wait`` seconds is slept inside the visit (the lease is ours, no other instance
   sends meanwhile); a longer one ends the visit (``wait``, or ``redirected`` mid-chain);
4. the slot is released with the next allowed time set to the end of the last request plus
   the gap. A crashed instance's lease lapses (``lease_seconds``, renewed before each
   request).

A redirect to another site is not followed in the visit (``redirected``): that site has its
own slot and robots.txt, so the runner fetches the target as a page of its own.

``fetch_waiting`` is for local runs and tools only: it sleeps through ``wait`` answers up to
a bound. A deployed runner never sleeps for a site; it reschedules its task.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import httpx

from colony.adapters.robots import FRESH_FOR, MAX_BYTES, Robots, origin_of, robots_url
from colony.adapters.web import Limits, SafeFetcher, user_agent
from colony.adapters.web_body import PAGE_TYPES
from colony.adapters.web_guard import AddressGuard
from colony.errors import ConfigError
from colony.ports.web import FetchOutcome, FetchResult, WebFetcher
from colony.store.db import Database
from colony.store.research import sites

if TYPE_CHECKING:
    from colony.settings import Settings

DEFAULT_GAP = 1.0  # seconds between two requests to one site, at least
INLINE_WAIT = 2.0  # a gap up to this is slept inside a visit; a longer one ends it
BUSY_RETRY = 1.0  # a live lease: ask again this much later
DISALLOWED = "robots.txt refuses ColonyResearch this URL"
UNANSWERED = "robots.txt got no answer from this origin: the site does not answer there"


def site_of(url: str) -> str:
    """The site ``url`` belongs to, for the pace: its host, lower-case, ``www.`` folded in
    (the public-suffix list would fold every subdomain; not yet needed)."""
    host = httpx.URL(url).raw_host.decode("ascii").lower().rstrip(".")
    return host.removeprefix("www.")


class PoliteWebFetcher:
    """``WebFetcher`` over ``fetcher``, paced per site in ``db`` (module docstring)."""

    def __init__(
        self,
        db: Database,
        fetcher: SafeFetcher,
        *,
        gap: float = DEFAULT_GAP,
        inline_wait: float = INLINE_WAIT,
        sleep: Callable[[float], None] = time.sleep,
        accept: frozenset[str] = PAGE_TYPES,
    ) -> None:
        self._db = db
        self.fetcher = fetcher
        self.accept = accept  # the media types a page is read as (others: ``bad_type``)
        self.gap = gap
        self.inline_wait = inline_wait
        self.sleep = sleep
        # one request's deadline and the wait before it, with room: renewed before each
        self.lease_seconds = fetcher.limits.deadline + inline_wait + 10.0

    def fetch(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> FetchResult:
        refused = self.fetcher.refused(url)  # before any slot: a refusal sends nothing
        if refused is not None:
            return refused
        site, origin = site_of(url), origin_of(url)
        known = self.robots(origin)
        if known is not None and not known.allows(url):
            return _disallowed(url, self.fetcher.clock(), known)
        lease = uuid.uuid4().hex
        with self._db.transaction(None) as cur:
            slot = sites.claim(cur, site, lease, self.lease_seconds, BUSY_RETRY)
        if not slot.claimed:
            busy = f"site {site!r} is busy or was just read"
            return _wait(url, slot.now, slot.retry_at or slot.now, busy)
        visit = _Visit(self, site, lease)
        try:
            return visit.fetch(url, etag, last_modified)
        finally:
            with self._db.transaction(None) as cur:
                sites.release(cur, site, lease, visit.gap if visit.requests else 0.0)

    def robots(self, origin: str) -> Robots | None:
        """``origin``'s robots.txt if it was read within the freshness window."""
        with self._db.transaction(None) as cur:
            row = sites.robots(cur, origin, FRESH_FOR.total_seconds())
        return None if row is None else Robots(row["verdict"], row["body"], row["status"])

    def keep_robots(self, origin: str, robots: Robots) -> None:
        with self._db.transaction(None) as cur:
            sites.save_robots(cur, origin, robots.verdict, robots.body, robots.status)

    def renew(self, site: str, lease: str) -> bool:
        with self._db.transaction(None) as cur:
            return sites.renew(cur, site, lease, self.lease_seconds)


class _Visit:
    """One held slot: its requests spaced by the gap, robots.txt checked on every hop."""

    def __init__(self, polite: PoliteWebFetcher, site: str, lease: str) -> None:
        self._polite = polite
        self._site = site
        self._lease = lease
        self.gap = polite.gap
        self.requests = 0
        self._last_end = 0.0

    def fetch(self, url: str, etag: str | None, last_modified: str | None) -> FetchResult:
        fetcher = self._polite.fetcher
        rules = self._robots(url)
        if rules is not None and not rules.allows(url):
            return _disallowed(url, fetcher.clock(), rules)
        if rules is None or not self._ready():
            now = fetcher.clock()
            left = max(self._last_end + self.gap - time.monotonic(), BUSY_RETRY)
            return _wait(url, now, now + timedelta(seconds=left), "the site's pace")
        result = fetcher.get(
            url,
            etag=etag,
            last_modified=last_modified,
            accept=self._polite.accept,
            before_hop=self._hop,
        )
        self._ended()
        return result

    def _hop(self, url: str) -> tuple[FetchOutcome, str] | None:
        self._ended()  # the hop before this one just answered
        if site_of(url) != self._site:
            return "redirected", "to another site: fetch it as a page of its own"
        rules = self._robots(url)
        if rules is not None and not rules.allows(url):
            return "robots_disallowed", DISALLOWED
        if rules is None or not self._ready():
            return "redirected", "the site's pace: fetch it as a page of its own"
        return None

    def _same_site(self, url: str) -> tuple[FetchOutcome, str] | None:
        """robots.txt may redirect within the site (http to https, ``www.``), not away from
        it: another site's file is not this one's rules (read as no answer: disallow all)."""
        return None if site_of(url) == self._site else ("redirected", "robots.txt elsewhere")

    def _robots(self, url: str) -> Robots | None:
        """The origin's robots.txt, fetched in this visit if it is not known (None: its
        turn has not come within the visit)."""
        origin = origin_of(url)
        rules = self._polite.robots(origin)
        if rules is None:
            if not self._ready():
                return None
            fetched = self._polite.fetcher.get(
                robots_url(url), accept=None, max_bytes=MAX_BYTES, before_hop=self._same_site
            )
            self._ended()
            rules = Robots.from_fetch(fetched)
            self._polite.keep_robots(origin, rules)
        self.gap = max(self.gap, rules.crawl_delay() or 0.0)
        return rules

    def _ready(self) -> bool:
        """Space the next request from the last by the gap (sleeping up to ``inline_wait``)
        and renew the lease; False if the visit must end here instead."""
        if self.requests:
            left = self._last_end + self.gap - time.monotonic()
            if left > self._polite.inline_wait:
                return False
            if left > 0:
                self._polite.sleep(left)
        return self._polite.renew(self._site, self._lease)

    def _ended(self) -> None:
        self.requests += 1
        self._last_end = time.monotonic()


def _wait(url: str, now: datetime, retry_at: datetime, why: str) -> FetchResult:
    return FetchResult(url, url, "wait", now, retry_at=retry_at, detail=why)


def _disallowed(url: str, now: datetime, rules: Robots) -> FetchResult:
    """``url`` refused by its origin's robots.txt; when that file got no answer at all (no
    connection, TLS refused, a refused address), the page would get none either: the site is
    ``unreachable`` there (an https origin a site serves only over http, say)."""
    if rules.unanswered:
        return FetchResult(url, url, "unreachable", now, detail=UNANSWERED)
    return FetchResult(url, url, "robots_disallowed", now, detail=DISALLOWED)


def fetch_waiting(
    fetcher: WebFetcher,
    url: str,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
    max_wait: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> FetchResult:
    """``fetcher.fetch(url)``, asked again after each ``wait`` until its ``retry_at``, for at
    most ``max_wait`` seconds of waiting in all (local runs and tools only: module docstring)."""
    waited = 0.0
    while True:
        result = fetcher.fetch(url, etag=etag, last_modified=last_modified)
        if result.outcome != "wait" or result.retry_at is None:
            return result
        pause = max((result.retry_at - result.fetched_at).total_seconds(), 0.05)
        if waited + pause > max_wait:
            return result
        sleep(pause)
        waited += pause


LOCAL_CONTACT_URL = "http://localhost/colony-research"  # a local run's user agent names this


def web_from_settings(
    settings: Settings,
    db: Database,
    *,
    limits: Limits | None = None,
    accept: frozenset[str] = PAGE_TYPES,
) -> PoliteWebFetcher:
    """The research function's fetcher: our user agent naming ``research_contact_url``
    (required in production: a site's owner must be able to learn who reads them), the
    stand-in web's names routed to it where ``research_web`` is set (never in production).
    ``limits`` and ``accept`` for another reader (a rendered page's scripts)."""
    contact = settings.research_contact_url
    if contact is None:
        if settings.env == "production":
            raise ConfigError("COLONY_RESEARCH_CONTACT_URL is required to research in production")
        contact = LOCAL_CONTACT_URL
    guard = AddressGuard(local=settings.research_web)
    safe = SafeFetcher(user_agent(contact), guard=guard, limits=limits)
    return PoliteWebFetcher(db, safe, accept=accept)
