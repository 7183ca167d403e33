"""``read``: one fetched response → one ``Document``, whatever it holds.

    read(url, content_type, content, text)
      PDF         application/pdf, or bytes that start like one          → pdfs.read_pdf
      JSON        application/json, +json, or text that starts { or [    → a JSON Feed
                                                                           (feeds), else
                                                                           a job board
                                                                           (boards)
      XML         by its root element, whatever the type said: rss / feed / rdf:RDF → feeds;
                  urlset / sitemapindex → sitemaps; html → pages
      HTML        text/html, application/xhtml+xml, or no type            → pages.read_page

The arguments are a ``FetchResult``'s: ``final_url``, ``content_type``, ``content`` (a PDF's
bytes) and ``text`` (the fetcher's decoded text, charset already detected: used for every
textual type; the bytes are read as UTF-8 only when no text came).

**Never raises for what a response contains.** The parsers below read hostile bytes
(lxml, trafilatura, feedparser, pypdf), and what they raise on a file nobody foresaw is not
a fault a retry could mend: the same bytes fail the same way. So ``read`` answers such a
file as a ``Document`` with ``problem="unreadable"`` and logs the exception's class and
the URL (never the page's text). A bad input the readers know (a malformed feed, a broken
PDF, bad JSON) has its own problem code.

**XML bombs.** A document whose DOCTYPE declares entities is refused unread
(``unsafe_xml``): no feed or sitemap needs one, and an entity-expansion bomb cannot be
built without. Sitemaps are parsed by ``defusedxml`` as well, which refuses them too.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import date

from colony.research import dates
from colony.research.boards import read_board
from colony.research.document import Document, DocumentKind, Problem
from colony.research.feeds import is_json_feed, read_feed, read_json_feed
from colony.research.pages import read_page
from colony.research.pdfs import read_pdf
from colony.research.sitemaps import read_sitemap
from colony.research.urls import BOARD_API_HOSTS, host

LOG = logging.getLogger(__name__)
XML_TYPES = frozenset(
    {
        "application/xml",
        "text/xml",
        "application/rss+xml",
        "application/atom+xml",
        "application/rdf+xml",
    }
)
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
FEED_ROOTS = frozenset({"rss", "feed", "rdf", "channel"})
SITEMAP_ROOTS = frozenset({"urlset", "sitemapindex"})
_HEAD = 65_536  # where a document's prolog (and its DOCTYPE) must be
_NAME = re.compile(r"[A-Za-z_][\w.:-]*")
_SUBSET_END = re.compile(r"\]\s*>")
# What the prolog may hold before the root element, each skipped whole: (opens, closes).
_SKIPPED = (("<!--", "-->"), ("<?", "?>"), ("<![CDATA[", "]]>"))


def media(content_type: str | None) -> str | None:
    """``text/html; charset=utf-8`` → ``text/html``."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return kind or None


def _doctype_end(head: str, at: int) -> tuple[int, bool]:
    """Where the DOCTYPE at ``at`` ends (its ``>``; -1: not within ``head``), and whether its
    internal subset declares entities."""
    close, subset = head.find(">", at), head.find("[", at)
    if subset < 0 or 0 <= close < subset:
        return close, False
    end = _SUBSET_END.search(head, subset)
    declares = "<!ENTITY" in head[subset : end.start() if end else len(head)]
    return (end.end() - 1 if end else -1), declares


def prolog(text: str) -> tuple[str | None, bool]:
    """An XML or HTML document's root element (local name, lower-case; None if it does not
    start within ``_HEAD``) and whether its DOCTYPE declares entities.

    One pass, each step past the last: a hostile head of ten thousand unclosed comments or
    DOCTYPEs costs one scan (a regex per opener would rescan the rest for each)."""
    head, at, declares = text[:_HEAD], 0, False
    while (at := head.find("<", at)) >= 0:
        skipped = next((pair for pair in _SKIPPED if head.startswith(pair[0], at)), None)
        if skipped is not None:
            end = head.find(skipped[1], at + len(skipped[0]))
            at = end + len(skipped[1]) if end >= 0 else -1
        elif head.startswith("<!", at):  # the DOCTYPE, or a declaration its subset held
            end, found = _doctype_end(head, at)
            declares = declares or found or head.startswith("<!ENTITY", at)
            at = end + 1 if end >= 0 else -1
        elif name := _NAME.match(head, at + 1):
            return name.group(0).rsplit(":", 1)[-1].lower(), declares
        else:
            at += 1
        if at < 0:
            break
    return None, declares


def _json(url: str, text: str, today: date) -> Document:
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return Document("page", url, problem="bad_json")
    if is_json_feed(body):
        return read_json_feed(url, body, today)
    board = read_board(url, body, today)
    if board is not None:
        return board
    if host(url) in BOARD_API_HOSTS:
        return Document("job_board", url, problem="unknown_board")
    return Document("page", url, problem="unknown_json")


def _markup(url: str, kind: str | None, text: str, today: date) -> Document:
    root, declares = prolog(text)
    if root in FEED_ROOTS or root in SITEMAP_ROOTS:
        found: DocumentKind = "feed" if root in FEED_ROOTS else "sitemap"
        if declares:
            return Document(found, url, problem="unsafe_xml")
        if found == "feed":
            return read_feed(url, text, today)
        return read_sitemap(url, text, today)
    if kind in XML_TYPES and root != "html":
        problem: Problem = "unsafe_xml" if declares else "unknown_xml"
        return Document("page", url, problem=problem)
    return read_page(url, text, today)


def _dispatch(
    url: str, kind: str | None, content: bytes, text: str | None, today: date
) -> Document:
    if kind == "application/pdf" or content[:1024].lstrip().startswith(b"%PDF-"):
        return read_pdf(url, content, today)
    body = text if text is not None else content.decode("utf-8", "replace")
    start = body.lstrip()[:1]
    if (
        kind == "application/json"
        or (kind or "").endswith("+json")
        or (kind in (None, "text/plain") and start in ("{", "["))
    ):
        return _json(url, body, today)
    if kind is None or kind in XML_TYPES or kind in HTML_TYPES:
        return _markup(url, kind, body, today)
    return Document("page", url, problem="unsupported_type")


def read(
    url: str,
    content_type: str | None,
    content: bytes,
    text: str | None,
    *,
    today: date | None = None,
) -> Document:
    """One fetched response, read (the module docstring says how).

    Args:
        url: the final URL (``FetchResult.final_url``); links resolve against it.
        content_type: its media type (``FetchResult.content_type``; parameters ignored).
        content: the body's bytes (a PDF is read from these).
        text: the body decoded by the fetcher (``FetchResult.text``), None for a PDF.
        today: the day dates are judged against (none may be later); today in UTC if None.
    """
    day = today or dates.today_utc()
    kind = media(content_type)
    try:
        return _dispatch(url, kind, content, text, day)
    except Exception as error:  # a parser's surprise on hostile bytes: see the docstring
        LOG.warning("research reader: %s reading %s", type(error).__name__, url)
        return Document("page", url, problem="unreadable")
