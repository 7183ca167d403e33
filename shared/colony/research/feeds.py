"""A feed, read into items with dates: RSS 0.9x/1.0 (RDF)/2.0 and Atom through
``feedparser``, JSON Feed 1.x by hand.

Why feedparser and not the standard library's XML: the feeds worth reading are often not
well-formed (an unescaped ``&``, an unclosed tag, a date in any of a dozen formats), and
feedparser's answer to that is what the runner wants: it tries a strict XML parse, and when
that fails (``bozo``) reads the same bytes with a forgiving parser and keeps what it could.
Such a feed is ``malformed_feed`` with whatever items were salvaged, never an exception.
Its sanitiser also cleans entry HTML; it is pure Python (with the ``sgmllib`` port).

Safety: feedparser is handed a stream, never a string (a string may be taken as a URL to
fetch or a file to open), and a document that declares entities is refused before any
parser sees it (``reader``: an XML bomb's shape).
"""

from __future__ import annotations

import io
import re
from datetime import date
from typing import Any

from colony.research import dates
from colony.research.document import MAX_ITEM_TEXT, MAX_TITLE, Document, Item, listing, one_line
from colony.research.markup import html_text
from colony.research.urls import normalise

_PROLOG = re.compile(r"^\s*<\?xml[^>]*\?>")
JSON_FEED = "https://jsonfeed.org/version/"


def _raw(entry: Any, key: str) -> Any:
    """``entry[key]`` as parsed, without ``FeedParserDict``'s aliases (its ``updated`` falls
    back to ``published`` with a DeprecationWarning)."""
    return dict.get(entry, key) if isinstance(entry, dict) else None


def _day(entry: Any, today: date) -> date | None:
    """An entry's date as written (the publisher's day), else feedparser's UTC reading."""
    for key in ("published", "updated", "created"):
        if found := dates.published(dates.parse(_raw(entry, key)), today):
            return found
    for key in ("published_parsed", "updated_parsed"):
        parsed = _raw(entry, key)
        if parsed:
            try:
                found = dates.published(date(*parsed[:3]), today)
            except (TypeError, ValueError):
                found = None
            if found:
                return found
    return None


def _item(entry: Any, base: str, today: date) -> Item | None:
    url = normalise(str(_raw(entry, "link") or ""), base) or ""
    title = str(_raw(entry, "title") or "")
    detail = _raw(entry, "title_detail")
    if "html" in str(_raw(detail, "type") or ""):  # a title may carry markup (Atom's type)
        title = html_text(title, MAX_TITLE)
    title = one_line(title, MAX_TITLE)
    if not url and not title:
        return None
    summary = _raw(entry, "summary") or ""
    content = _raw(entry, "content")
    if not summary and isinstance(content, list) and content:
        summary = _raw(content[0], "value") or ""
    return Item(url, title, html_text(str(summary), MAX_ITEM_TEXT), _day(entry, today))


def read_feed(url: str, xml: str, today: date) -> Document:
    """An RSS, RDF or Atom feed at ``url`` whose decoded text is ``xml``."""
    # lazy: feedparser loads with the first RSS, RDF or Atom feed a pass reads (a site that
    # declares none never needs it; a JSON Feed is read without it)
    import feedparser
    from feedparser.exceptions import CharacterEncodingOverride, NonXMLContentType

    harmless = (CharacterEncodingOverride, NonXMLContentType)  # bozo for reasons that cost nothing
    # The text is already decoded: drop the prolog, whose encoding no longer applies.
    data = _PROLOG.sub("", xml, count=1).encode("utf-8")
    parsed = feedparser.parse(
        io.BytesIO(data),
        response_headers={
            "content-type": "application/xml; charset=utf-8",
            "content-location": url,
        },
        resolve_relative_uris=True,
        sanitize_html=True,
    )
    found = [item for e in parsed.entries if (item := _item(e, url, today)) is not None]
    feed = _raw(parsed, "feed") or {}
    own = None
    for key in ("updated", "published"):
        own = own or dates.published(dates.parse(_raw(feed, key)), today)
    malformed = _raw(parsed, "bozo") and not isinstance(_raw(parsed, "bozo_exception"), harmless)
    return listing(
        "feed",
        url,
        found,
        "feed",
        title=one_line(str(_raw(feed, "title") or ""), MAX_TITLE) or None,
        published=own,
        problem="malformed_feed" if malformed or not (found or feed) else None,
    )


def is_json_feed(body: object) -> bool:
    return isinstance(body, dict) and str(body.get("version", "")).startswith(JSON_FEED)


def read_json_feed(url: str, body: dict[str, Any], today: date) -> Document:
    """A JSON Feed (https://jsonfeed.org/version/1.1), already parsed."""
    found = []
    entries = body.get("items")
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        link = entry.get("url") or entry.get("external_url")
        target = normalise(link, url) if isinstance(link, str) else None
        title = one_line(str(entry.get("title") or ""), MAX_TITLE)
        if not (target or title):
            continue
        text = entry.get("content_text") or entry.get("summary") or ""
        if not text and isinstance(entry.get("content_html"), str):
            text = html_text(entry["content_html"], MAX_ITEM_TEXT)
        day = dates.parse(entry.get("date_published") or entry.get("date_modified"))
        summary = one_line(str(text), MAX_ITEM_TEXT)
        found.append(Item(target or "", title, summary, dates.published(day, today)))
    name = one_line(str(body.get("title") or ""), MAX_TITLE) or None
    return listing("feed", url, found, "feed", title=name)
