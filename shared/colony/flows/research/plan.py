"""Which pages of a company are worth reading, in what order, and how many of each.

A pass starts at the company's home page and its ``sitemap.xml``; every document read adds
what it links to that research wants (``follow``): the about, leadership, locations, news and
careers pages, the feeds the site declares, its public job board, the newest news articles
and the PDFs they link. Each *role* has a cap (one about page, three articles, two PDFs) and a
priority: what says most about a company's buying signals is fetched first, so a pass cut
short by its page budget has read the best of the site.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:  # only annotations: what only asks for research carries no reader
    from colony.research import Document

# role -> (priority: lower first, the most of it one pass fetches)
ROLES: dict[str, tuple[int, int]] = {
    "home": (0, 2),  # https://, then http:// when the first cannot be reached
    "sitemap": (1, 1),  # early: its dates choose the newest articles
    "news": (2, 1),
    "about": (3, 1),
    "careers": (4, 1),
    "job_board": (5, 1),
    "article": (6, 3),
    "feed": (7, 1),
    "leadership": (8, 1),
    "locations": (9, 1),
    "pdf": (10, 2),
    "moved": (11, 2),  # where a page redirected to another site
}
MAX_PAGES = 16  # fetches per pass, whatever the caps allow
NEWS_PATHS = ("/news", "/press", "/blog", "/newsroom", "/media", "/insights", "/updates")
# what a link's kind is followed as, from any page
_FOLLOW = {
    "about": "about",
    "leadership": "leadership",
    "locations": "locations",
    "careers": "careers",
    "job_board": "job_board",
    "feed": "feed",
    "sitemap": "sitemap",
    "pdf": "pdf",
}

Entry = dict[str, Any]  # {"url", "role", "prio", "day"}: what a job's frontier holds


def entry(url: str, role: str, day: date | None = None) -> Entry:
    prio, _ = ROLES[role]
    return {"url": url, "role": role, "prio": prio, "day": day.isoformat() if day else None}


def first(domain: str) -> list[Entry]:
    """A new pass's frontier: the home page (https first) and the sitemap."""
    return [entry(f"https://{domain}/", "home"), entry(f"https://{domain}/sitemap.xml", "sitemap")]


def plain_http(url: str) -> str | None:
    """``url`` over http, for a home page whose https could not be reached."""
    parts = urlsplit(url)
    return urlunsplit(("http", *parts[1:])) if parts.scheme == "https" else None


def over_http(frontier: Sequence[Entry], domain: str, home: str) -> list[Entry]:
    """``frontier`` after ``home`` (https) could not be reached: the home page and every
    queued https page of the company's own site asked over http instead."""
    moved = [entry(plain_http(home) or home, "home")]
    for e in frontier:
        http = plain_http(e["url"]) if site(e["url"]) == domain else None
        moved.append({**e, "url": http} if http else dict(e))
    return moved


def site(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    return host.removeprefix("www.")


def _is_news(url: str, news_index: str | None) -> bool:
    path = urlsplit(url).path.rstrip("/").lower()
    if news_index and path.startswith(urlsplit(news_index).path.rstrip("/").lower() + "/"):
        return True
    return any(path.startswith(p + "/") for p in NEWS_PATHS)


def follow(doc: Document, role: str, domain: str) -> list[Entry]:
    """What ``doc`` (read as ``role``) leads to that research wants: classified links from
    any page, articles from the news index, the sitemap and feeds (with their dates), each
    URL once (``merge`` adds them to a frontier)."""
    seen: set[str] = set()
    news_index = doc.url if role == "news" else None
    found: list[Entry] = []

    def add(url: str, new_role: str, day: date | None = None) -> None:
        if url not in seen:
            seen.add(url)
            found.append(entry(url, new_role, day))

    for link in doc.links:
        on_site = site(link.url) == domain
        if link.kind in ("news", "press") and on_site:
            add(link.url, "article" if _is_news(link.url, news_index) else "news")
        elif link.kind in _FOLLOW and (on_site or link.kind in ("job_board", "feed", "pdf")):
            if link.kind == "pdf" and role not in ("article", "news", "home"):
                continue
            add(link.url, _FOLLOW[link.kind])
        elif link.kind == "page" and on_site and role == "news" and _is_news(link.url, news_index):
            add(link.url, "article")
    if role in ("sitemap", "feed", "news"):
        items = [i for i in doc.items if site(i.url) == domain and _is_news(i.url, None)]
        items.sort(key=lambda i: i.published_at or date.min, reverse=True)
        for item in items:
            is_pdf = urlsplit(item.url).path.lower().endswith(".pdf")
            add(item.url, "pdf" if is_pdf else "article", item.published_at)
    return found


def merge(frontier: Sequence[Entry], found: Iterable[Entry], tried: Iterable[str]) -> list[Entry]:
    """``frontier`` with ``found`` added: a URL tried or queued is not queued again, but a
    date learnt later (an article the sitemap dates) is kept on its entry."""
    merged = [dict(e) for e in frontier]
    at = {e["url"]: e for e in merged}
    done = set(tried)
    for new in found:
        if new["url"] in done:
            continue
        old = at.get(new["url"])
        if old is None:
            merged.append(new)
            at[new["url"]] = new
        elif old.get("day") is None and new.get("day"):
            old["day"] = new["day"]
    return merged


def order(frontier: Sequence[Entry]) -> list[Entry]:
    """Best first: by role priority, then newest (articles), then as found."""
    ranked = sorted(
        enumerate(frontier),
        key=lambda e: (e[1]["prio"], _newest_first(e[1].get("day")), e[0]),
    )
    return [e for _, e in ranked]


def _newest_first(day: str | None) -> int:
    return -date.fromisoformat(day).toordinal() if day else 0


def take(
    frontier: Sequence[Entry], done_roles: Mapping[str, int]
) -> tuple[Entry | None, list[Entry]]:
    """The next entry to fetch (None: nothing left within the caps) and the rest."""
    rest = order(frontier)
    while rest:
        head = rest.pop(0)
        if done_roles.get(head["role"], 0) < ROLES[head["role"]][1]:
            return head, rest
    return None, []
