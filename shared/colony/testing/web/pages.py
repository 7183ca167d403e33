"""What the stand-in web is made of: a ``Site`` (one hostname) answers a path with a ``Page``;
a page's body is bytes, or a ``Stream`` produced while it is sent (the 50 MB page, the page
that never finishes), so nothing large is ever held in memory. ``Robots`` is a site's
robots.txt as data: the server renders it and also judges, per request, whether the path was
disallowed for our user agent (a robots violation it counts).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from email.utils import parsedate_to_datetime

AGENT = "ColonyResearch"  # the product token robots.txt groups are matched on
SCHEME = "http"  # the stand-in speaks plain HTTP: its sites' absolute links say http://
HTML = "text/html; charset=utf-8"
BASE_DATE = date(2026, 6, 1)  # Last-Modified of a page that names no date of its own


def on(day: date) -> datetime:
    """A day as the instant its page was published (09:00 UTC)."""
    return datetime.combine(day, time(9, 0), tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Stream:
    """A body written while it is sent: ``chunks()`` is called once per response.

    ``length`` is the ``Content-Length`` to declare (``None``: the connection's close ends
    the body); ``gap`` seconds pass before each chunk after the first; the server stops after
    ``limit`` seconds whatever is left (a page that never finishes still frees its thread)."""

    chunks: Callable[[], Iterator[bytes]]
    length: int | None = None
    gap: float = 0.0
    limit: float = 60.0


@dataclass(frozen=True, slots=True)
class Page:
    """One answer. ``etag`` defaults to a hash of ``body``; ``modified`` to ``BASE_DATE``."""

    body: bytes = b""
    content_type: str = HTML
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    modified: datetime | None = None
    stream: Stream | None = None
    etag: str | None = None

    @property
    def tag(self) -> str:
        return self.etag or '"' + hashlib.sha256(self.body).hexdigest()[:20] + '"'

    @property
    def last_modified(self) -> datetime:
        return self.modified or on(BASE_DATE)


def not_modified(page: Page, headers: Mapping[str, str]) -> bool:
    """Whether the client's copy is current: ``If-None-Match`` if sent (weak tags compared
    weakly), else ``If-Modified-Since`` (``headers`` lower-cased)."""
    tags = headers.get("if-none-match")
    if tags is not None:
        wanted = {tag.strip().removeprefix("W/") for tag in tags.split(",")}
        return "*" in wanted or page.tag.removeprefix("W/") in wanted
    since = headers.get("if-modified-since")
    if not since:
        return False
    try:
        when = parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False
    return page.last_modified <= (when if when.tzinfo else when.replace(tzinfo=UTC))


def redirect(location: str, status: int = 302) -> Page:
    return Page(b"", "text/plain", status, {"Location": location})


def not_found(path: str) -> Page:
    return Page(f"<h1>Not found</h1><p>{path}</p>".encode(), status=404)


@dataclass(frozen=True, slots=True)
class Robots:
    """robots.txt as groups: user agent → disallowed path prefixes (``()``: all allowed).

    As RFC 9309 says, a crawler obeys the group naming its product token if there is one,
    else the ``*`` group, never both. ``sitemap`` is an absolute URL."""

    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sitemap: str | None = None

    def rules_for(self, agent: str = AGENT) -> tuple[str, ...]:
        by_name = {name.lower(): rules for name, rules in self.groups.items()}
        return by_name.get(agent.lower(), by_name.get("*", ()))

    def disallows(self, target: str, agent: str = AGENT) -> bool:
        """Whether ``target`` (path and query) is disallowed for ``agent``."""
        if target == "/robots.txt":
            return False
        return any(target.startswith(prefix) for prefix in self.rules_for(agent))

    def refusing(self, agent: str = AGENT) -> Robots:
        """The same file with a group refusing ``agent`` everything."""
        return Robots({**self.groups, agent: ("/",)}, self.sitemap)

    def render(self) -> bytes:
        lines: list[str] = []
        for name, rules in self.groups.items():
            lines.append(f"User-agent: {name}")
            lines.extend(f"Disallow: {rule}" for rule in rules or ("",))
            lines.append("")
        if self.sitemap:
            lines.append(f"Sitemap: {self.sitemap}")
        return ("\n".join(lines) + "\n").encode()


Resolver = Callable[[str], Page | None]


@dataclass
class Site:
    """One hostname: fixed ``pages`` by path (query ignored), else ``dynamic(target)`` with
    the path and query, else a 404. ``robots=None`` serves robots.txt as a 404 (allow all).
    ``generated`` marks a company site (the benchmark's robots refusals apply to those)."""

    host: str
    pages: dict[str, Page] = field(default_factory=dict)
    robots: Robots | None = None
    dynamic: Resolver | None = None
    generated: bool = False

    def page(self, target: str, robots: Robots | None) -> Page:
        path = target.split("?", 1)[0]
        if path == "/robots.txt" and robots is not None:
            return Page(robots.render(), "text/plain; charset=utf-8")
        if path in self.pages:
            return self.pages[path]
        found = self.dynamic(target) if self.dynamic is not None else None
        return found if found is not None else not_found(path)
