"""The links of an HTML page worth following, classified (``discover``).

Kept: same-site ``<a>``/``<area>`` links (kind by path, else anchor text: ``urls.kind_of``),
feeds a page declares (``<link rel="alternate" type="application/rss+xml|atom+xml|
feed+json">``) or links to, PDFs anywhere, a ``<meta http-equiv="refresh">`` target, and
public job boards wherever they are linked, framed or scripted (``<iframe>``/``<script src>``:
Greenhouse's embed), each as its JSON API (``urls.board_api``).

Dropped: ``mailto:``/``tel:``/``javascript:``, fragments, files no reader reads (images,
scripts, archives, office files), the page itself, other sites' pages, and a page linked again
with only another query string (``/news?sort=date`` after ``/news``: the same page, or a
view of it that the feed and sitemap cover better). Links inside hidden markup are kept: a
link is only a suggestion of what to fetch (robots.txt and politeness still decide), and
nav menus are often hidden until a click.

Order: as ``LinkKind`` lists them (job boards, feeds, sitemaps, the sections, PDFs, plain
pages last), each in page order, at most ``MAX_LINKS``: a page of 5,000 links keeps its nav.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import get_args
from urllib.parse import urlsplit

from lxml.html import HtmlElement

from colony.research.document import MAX_LINK_TEXT, MAX_LINKS, Link, LinkKind, one_line
from colony.research.urls import (
    SKIPPED_EXTENSIONS,
    board_api,
    host,
    kind_of,
    normalise,
    site,
)

FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/feed+json"})
MAX_ELEMENTS = 5_000  # anchors looked at per page; the rest of a link farm is not read
_PRIORITY: tuple[LinkKind, ...] = get_args(LinkKind)
_OFF_SITE_KINDS = frozenset({"feed", "pdf"})
_PAGES = frozenset({"about", "leadership", "locations", "news", "press", "careers", "page"})
_REFRESH = re.compile(r"url\s*=\s*['\"]?([^'\"]+)", re.I)


def _anchor_text(element: HtmlElement) -> str:
    text = one_line(element.text_content(), MAX_LINK_TEXT)
    if not text:
        labels = [element.get("aria-label"), element.get("title")]
        labels += [img.get("alt") for img in element.iter("img")]
        text = one_line(next((label for label in labels if label), ""), MAX_LINK_TEXT)
    return text


def base_url(tree: HtmlElement, url: str) -> str:
    """What the page's relative links resolve against: its ``<base href>``, else its URL."""
    for element in tree.iter("base"):
        found = normalise(element.get("href") or "", url)
        if found:
            return found
    return url


def _page_of(url: str) -> tuple[str, str]:
    """A URL's site and path: what two links to one page share, whatever their query."""
    return site(url), urlsplit(url).path


class _Found:
    """The links accepted so far, without duplicates, in page order. Of two links to one
    page that differ by their query, the first is kept, or the one without a query."""

    def __init__(self, page: str) -> None:
        self.page_site = site(page)
        self.links: list[Link] = []
        self._urls = {page}
        self._pages: dict[tuple[str, str], int | None] = {_page_of(page): None}  # → index

    def add(self, url: str, text: str, kind: LinkKind) -> None:
        if url in self._urls:
            return
        self._urls.add(url)
        if kind not in _PAGES:
            self.links.append(Link(url, text, kind))
            return
        key = _page_of(url)
        if key not in self._pages:
            self._pages[key] = len(self.links)
            self.links.append(Link(url, text, kind))
            return
        index = self._pages[key]
        if index is not None and "?" in self.links[index].url and "?" not in url:
            self.links[index] = Link(url, text, kind)

    def consider(self, href: str | None, base: str, text: str) -> None:
        url = normalise(href or "", base)
        if url is None or SKIPPED_EXTENSIONS.search(url.split("?", 1)[0]):
            return
        board = board_api(url)
        if board is not None:
            self.add(board, text, "job_board")
            return
        kind = kind_of(url, text)
        if site(host(url)) == self.page_site or kind in _OFF_SITE_KINDS:
            self.add(url, text, kind)


def discover(tree: HtmlElement, url: str) -> tuple[Link, ...]:
    """The page's links worth following (see the module docstring), at most ``MAX_LINKS``."""
    base = base_url(tree, url)
    found = _Found(url)
    for element in tree.iter("link"):
        rel = (element.get("rel") or "").lower().split()
        kind = (element.get("type") or "").split(";")[0].strip().lower()
        if "alternate" in rel and kind in FEED_TYPES:
            target = normalise(element.get("href") or "", base)
            if target is not None:
                found.add(target, one_line(element.get("title"), MAX_LINK_TEXT), "feed")
    for element in tree.iter("meta"):
        if (element.get("http-equiv") or "").lower() == "refresh":
            refresh = _REFRESH.search(element.get("content") or "")
            if refresh:
                found.consider(refresh.group(1), base, "")
    for element in islice(tree.iter("a", "area", "iframe", "script"), MAX_ELEMENTS):
        if element.tag in ("a", "area"):
            found.consider(element.get("href"), base, _anchor_text(element))
        else:  # a framed or scripted job board (Greenhouse's embed); nothing else
            target = normalise(element.get("src") or "", base)
            board = board_api(target) if target else None
            if board is not None:
                found.add(board, "", "job_board")
    return rank(found.links)[:MAX_LINKS]


def rank(links: list[Link]) -> tuple[Link, ...]:
    """``links`` with the classified kinds first (the module docstring's order), each kind
    in its given order."""
    return tuple(sorted(links, key=lambda link: _PRIORITY.index(link.kind)))
