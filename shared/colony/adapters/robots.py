"""robots.txt as RFC 9309 has a crawler read it, for ``ColonyResearch`` (issue 33 item 2).

What a fetch of ``/robots.txt`` (through the same ``SafeFetcher``, so the same address rules)
means for the origin it was fetched from:

- read (2xx, or cut at ``MAX_BYTES``, of which the RFC asks parsers to read at least 500 KiB):
  its rules, parsed by ``protego``, for the group matching ``ColonyResearch`` (else ``*``);
- 4xx (404 most often): no robots.txt, every path allowed (RFC 9309 2.3.1.3);
- 5xx, unreachable, timeout, a refused address, a redirect loop or one to another site:
  every path disallowed for now (RFC 9309 2.3.1.4: a server error must not be taken as
  permission).

``Robots`` is what is kept per origin (``colony.store.research``, shared by every instance
for ``FRESH_FOR``), and is rebuilt from that row without another fetch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

import httpx
from protego import Protego

from colony.adapters.web import PRODUCT
from colony.ports.web import FetchResult

MAX_BYTES = 512 * 1024
FRESH_FOR = timedelta(hours=24)  # RFC 9309 2.4: a cached robots.txt is used 24 hours at most
Verdict = Literal["rules", "allow_all", "disallow_all"]


def robots_url(url: str) -> str:
    """The robots.txt of ``url``'s origin (scheme, host and port)."""
    return str(httpx.URL(url).copy_with(path="/robots.txt", query=None, fragment=None))


def origin_of(url: str) -> str:
    """``scheme://host[:port]``, the key robots.txt rules belong to."""
    parts = httpx.URL(url)
    host = parts.raw_host.decode("ascii").lower()
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


@dataclass(frozen=True, slots=True)
class Robots:
    """One origin's robots.txt: ``verdict`` and, for ``rules``, the text it was read from."""

    verdict: Verdict
    body: str = ""
    status: int | None = None

    @classmethod
    def from_fetch(cls, result: FetchResult) -> Robots:
        """What a fetch of robots.txt means (the module docstring's rules)."""
        if result.outcome in ("ok", "too_large"):
            return cls("rules", (result.text or "").replace("\x00", ""), result.status)
        if result.outcome == "http_error" and result.status and 400 <= result.status < 500:
            return cls("allow_all", status=result.status)
        return cls("disallow_all", status=result.status)

    @property
    def unanswered(self) -> bool:
        """Disallowed because the origin gave no answer at all (no HTTP status)."""
        return self.verdict == "disallow_all" and self.status is None

    def allows(self, url: str) -> bool:
        """May ``ColonyResearch`` fetch ``url``?"""
        if self.verdict != "rules":
            return self.verdict == "allow_all"
        return bool(self._parsed().can_fetch(url, PRODUCT))

    def crawl_delay(self) -> float | None:
        """The Crawl-delay the group for ``ColonyResearch`` asks for, in seconds."""
        if self.verdict != "rules":
            return None
        delay = self._parsed().crawl_delay(PRODUCT)
        return None if delay is None else float(delay)

    def _parsed(self) -> Protego:
        return Protego.parse(self.body)
