"""What reading one response comes to: a ``Document`` with its ``Link``\\ s and ``Item``\\ s,
the limits every reader keeps, and the small text helpers they share.

Everything here is plain data: a reader builds it, the research runner stores and follows
it. Every field is bounded (``MAX_*``), so a hostile page costs at most that much to keep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Literal

DocumentKind = Literal["page", "feed", "job_board", "pdf", "sitemap"]
# In the order links are ranked (``links.rank``): what says most about a company first.
LinkKind = Literal[
    "job_board",
    "feed",
    "sitemap",
    "about",
    "leadership",
    "locations",
    "news",
    "press",
    "careers",
    "pdf",
    "page",
]
# Why a document holds less than it should; None when it read as expected.
Problem = Literal[
    "malformed_feed",  # feedparser had to recover: ``items`` are what it salvaged
    "malformed_sitemap",  # the sitemap is not well-formed XML (nothing is guessed from it)
    "unsafe_xml",  # the XML declares entities (an XML bomb's shape): refused unread
    "encrypted_pdf",  # the PDF needs a password
    "broken_pdf",  # the PDF is damaged or over a limit: ``text`` is what was read before
    "no_text",  # a page that shows no text, and not for want of JavaScript
    "bad_json",  # the body is not JSON
    "unknown_board",  # a job board's API answered JSON in a shape we do not know
    "unknown_json",  # JSON that is neither a job board nor a JSON Feed
    "unknown_xml",  # XML that is neither a feed nor a sitemap
    "unsupported_type",  # a type no reader here reads
    "unreadable",  # a parser failed on it in a way no reader foresaw (``reader.read`` says why)
]

MAX_LINKS = 200
MAX_ITEMS = 100
MAX_TEXT = 200_000  # characters of a document's text
MAX_ITEM_TEXT = 1_000  # characters of an item's text
MAX_TITLE = 300
MAX_LINK_TEXT = 200
MAX_URL = 2_000  # longer URLs are not followed (nor kept)

_SPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


@dataclass(frozen=True, slots=True)
class Link:
    """A URL worth following: absolute, fragment removed, normalised (``urls.normalise``),
    with its anchor text (whitespace collapsed, at most ``MAX_LINK_TEXT``) and what it
    probably leads to."""

    url: str
    text: str
    kind: LinkKind


@dataclass(frozen=True, slots=True)
class Item:
    """A feed entry, a job posting or a sitemap URL, with its own date when it has one."""

    url: str
    title: str
    text: str
    published_at: date | None
    location: str | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """One response, read.

    Attributes:
        kind: which reader read it.
        url: the final URL (after redirects), as fetched.
        title: the page's, feed's or PDF's title, if it has one.
        text: the main text, boilerplate removed (``''`` for feeds, boards and sitemaps,
            whose text is in their ``items``).
        published_at: when it was published (never after today); a feed's is its own
            date else its newest item's, a board's or sitemap's its newest item's.
        date_source: how ``published_at`` was found: ``article:published_time``, ``time``
            (a ``<time datetime>``), ``url``, ``htmldate``, ``feed``, ``board``, ``sitemap``,
            ``pdf`` (its metadata) or ``text`` (a PDF's dateline).
        links: same-site links worth following, classified, plus off-site job boards (as
            their JSON API), feeds and PDFs; at most ``MAX_LINKS``, the classified first.
        items: feed entries, job postings or sitemap URLs, newest first, at most ``MAX_ITEMS``.
        needs_browser: the page shows (almost) no text without JavaScript.
        problem: why it holds less than it should (``Problem``), or None.
    """

    kind: DocumentKind
    url: str
    title: str | None = None
    text: str = ""
    published_at: date | None = None
    date_source: str | None = None
    links: tuple[Link, ...] = ()
    items: tuple[Item, ...] = ()
    needs_browser: bool = False
    problem: Problem | None = None


def one_line(text: str | None, limit: int) -> str:
    """``text`` with every run of whitespace one space, stripped, at most ``limit`` chars."""
    return _SPACE.sub(" ", text or "").strip()[:limit]


def paragraphs(text: str | None, limit: int) -> str:
    """``text`` with blank-line runs folded to one, stripped, at most ``limit`` chars."""
    return _BLANK_LINES.sub("\n\n", (text or "").replace("\r\n", "\n")).strip()[:limit]


def newest_first(items: list[Item], limit: int = MAX_ITEMS) -> tuple[Item, ...]:
    """The newest ``limit`` items, newest first (undated ones last, in their order)."""
    dated = sorted(
        (i for i in items if i.published_at),
        key=lambda i: i.published_at or date.min,
        reverse=True,  # stable: items of one day keep their order
    )
    return tuple([*dated, *(i for i in items if not i.published_at)][:limit])


def listing(
    kind: DocumentKind,
    url: str,
    found: list[Item],
    source: str,
    *,
    title: str | None = None,
    published: date | None = None,
    problem: Problem | None = None,
) -> Document:
    """A document of items (a feed, a board, a sitemap): the newest ``MAX_ITEMS`` first,
    dated ``published`` (its own date) else by its newest item, found by ``source``."""
    items = newest_first(found)
    newest = published or next((i.published_at for i in items if i.published_at), None)
    return Document(
        kind,
        url,
        title=title,
        published_at=newest,
        date_source=source if newest else None,
        items=items,
        problem=problem,
    )
