"""An HTML page, read: its title, publication date, links, main text, and whether it needs
a browser to show any.

    read_page(url, html, today)
      parse            trafilatura's ``load_html`` (lxml; an encoding declaration in a
                       decoded string is handled), at most ``MAX_HTML`` characters
      title, date      from the whole page (``page_date``)
      links            from the whole page (``links.discover``)
      hide             drop what people are not shown (``hide``)
      bound            cut what is past ``MAX_ELEMENTS`` or ``MAX_READ_TEXT`` (``bound``)
      text             trafilatura, for precision: no comments, tables kept
      needs_browser    scripts, no main text, and (almost) nothing visible or a
                       ``<noscript>`` asking for JavaScript

**Dates.** ``article:published_time`` (or ``itemprop="datePublished"``) first, then a
``<time datetime>`` (the one in the page's only ``<article>``, or the one date all the
page's ``<time>``\\ s agree on), then a ``/2026/11/02/`` URL, then ``htmldate`` (original
date, markup only: its free-text search reads a footer's "© 2026" as 1 January). A page
whose ``<time>``\\ s name several dates is a listing: its dates are its items', so
``htmldate`` (which would answer the oldest of them) is not asked. None is from the future.

**Hidden text.** Planted instructions are text like any other (they are data downstream,
docs/architecture.md "Untrusted text stays data"), so nothing is stripped for what it says.
What people are not shown is dropped, because it is not what the page tells a reader:
``hidden`` (not ``until-found``, which a find-in-page shows), ``aria-hidden="true"``, an
inline ``display: none`` / ``visibility: hidden``, and ``<template>``. trafilatura drops the
exact ``display:none`` and ``aria-hidden`` itself, but keeps ``hidden``, ``<template>`` and
spaced or upper-case styles. Stylesheets are not evaluated: text hidden by a class stays.
``opacity: 0`` and ``font-size: 0`` stay too: fade-in effects and inline-block layouts use
them on text people do see.
"""

from __future__ import annotations

import re
from datetime import date

import htmldate
import trafilatura
from lxml.html import HtmlElement

from colony.research import dates
from colony.research.document import MAX_TEXT, MAX_TITLE, Document, one_line, paragraphs
from colony.research.links import discover

MAX_HTML = 3_000_000  # characters parsed; the fetcher's cap is 5 MB of bytes
# What trafilatura is given: its cost grows faster than the page (20,000 elements take it
# about 1 s, 40,000 about 6 s), and the text kept is ``MAX_TEXT`` anyway. A long article
# is a few thousand elements; what is past either limit is cut before extraction.
MAX_ELEMENTS = 20_000
MAX_READ_TEXT = 2 * MAX_TEXT  # characters of text (scripts and styles aside)
FEW_WORDS = 30  # visible words below which a scripted page with no main text needs a browser
_PUBLISHED = frozenset(
    {"article:published_time", "og:article:published_time", "datepublished", "dc.date.issued"}
)
_HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
_KEPT = frozenset({"html", "head", "body"})  # never dropped, whatever they say
_INVISIBLE = "ancestor::script or ancestor::style or ancestor::noscript or ancestor::template"
_SCRIPTS = "//script[not(@type) or not(contains(@type, 'json'))]"


def _hidden(element: HtmlElement) -> bool:
    if element.tag == "template":
        return True
    flag = element.get("hidden")
    if flag is not None and flag.strip().lower() != "until-found":
        return True
    if (element.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return bool(_HIDDEN_STYLE.search(element.get("style") or ""))


def hide(tree: HtmlElement) -> int:
    """Drop, in place, every element people are not shown (the module docstring says which);
    the text after each stays. How many were dropped."""
    doomed = [
        element
        for element in tree.iter()
        if isinstance(element.tag, str) and element.tag not in _KEPT and _hidden(element)
    ]
    for element in doomed:
        if element.getparent() is not None:
            element.drop_tree()
    return len(doomed)


def _cut_after(element: HtmlElement) -> None:
    """Drop ``element`` and everything after it in document order."""
    node: HtmlElement | None = element
    while node is not None and (parent := node.getparent()) is not None:
        for follower in list(node.itersiblings()):
            parent.remove(follower)
        node = parent
    if (parent := element.getparent()) is not None:
        parent.remove(element)


def bound(tree: HtmlElement) -> bool:
    """Cut the page, in place, at ``MAX_ELEMENTS`` elements or ``MAX_READ_TEXT`` characters
    of text, whichever comes first; whether it was cut."""
    size = 0
    for count, element in enumerate(tree.iter()):
        if count >= MAX_ELEMENTS or size >= MAX_READ_TEXT:
            _cut_after(element)
            return True
        if element.tag not in ("script", "style"):
            size += len(element.text or "")
        size += len(element.tail or "")
    return False


def title_of(tree: HtmlElement) -> str | None:
    """The ``<title>``, else ``og:title``, else the first ``<h1>``."""
    for element in tree.iter("title"):
        if found := one_line(element.text_content(), MAX_TITLE):
            return found
    for element in tree.iter("meta"):
        is_og_title = (element.get("property") or "").lower() == "og:title"
        if is_og_title and (found := one_line(element.get("content"), MAX_TITLE)):
            return found
    for element in tree.iter("h1"):
        if found := one_line(element.text_content(), MAX_TITLE):
            return found
    return None


def _declared(tree: HtmlElement, today: date) -> date | None:
    """``article:published_time`` and its kin (``itemprop="datePublished"``)."""
    for element in tree.iter("meta", "time", "span", "div", "p"):
        name = element.get("property") or element.get("name") or element.get("itemprop") or ""
        if name.lower() in _PUBLISHED:
            value = element.get("content") or element.get("datetime") or element.text_content()
            if found := dates.published(dates.parse(value), today):
                return found
    return None


def _time_element(tree: HtmlElement, today: date) -> tuple[date | None, bool]:
    """The page's ``<time datetime>`` date, and whether the page is a listing of dates."""
    articles = tree.xpath("//article")
    if len(articles) == 1:
        for element in articles[0].iter("time"):
            if found := dates.published(dates.parse(element.get("datetime")), today):
                return found, False
    seen = {dates.published(dates.parse(t.get("datetime")), today) for t in tree.iter("time")}
    seen.discard(None)
    if len(seen) == 1:
        return seen.pop(), False
    return None, len(seen) > 1


def page_date(tree: HtmlElement, url: str, today: date) -> tuple[date | None, str | None]:
    """When the page was published and how that was found (the module docstring's order)."""
    if found := _declared(tree, today):
        return found, "article:published_time"
    found, listing = _time_element(tree, today)
    if found:
        return found, "time"
    if found := dates.published(dates.in_url(url), today):
        return found, "url"
    if listing:
        return None, None
    value = htmldate.find_date(
        tree,
        extensive_search=False,
        original_date=True,
        url=url,
        max_date=today.isoformat(),
        outputformat="%Y-%m-%d",
    )
    if found := dates.published(dates.parse(value), today):
        return found, "htmldate"
    return None, None


def _visible_words(tree: HtmlElement) -> int:
    """Words a person sees without scripts running (call after ``hide``)."""
    roots = tree.xpath("//body") or [tree]
    texts = roots[0].xpath(f".//text()[not({_INVISIBLE})]")
    return sum(len(str(text).split()) for text in texts)


def _asks_for_javascript(tree: HtmlElement) -> bool:
    return any("javascript" in n.text_content().lower() for n in tree.iter("noscript"))


def main_text(tree: HtmlElement, url: str) -> str:
    """The page's main text, by trafilatura for precision (no comments; tables kept)."""
    found = trafilatura.extract(
        tree,
        url=url,
        favor_precision=True,
        include_comments=False,
        include_tables=True,
        include_images=False,
        include_links=False,
        deduplicate=False,
        with_metadata=False,
        output_format="txt",
    )
    return paragraphs(found, MAX_TEXT)


def read_page(url: str, html: str, today: date) -> Document:
    """The page at ``url`` (its final URL) whose decoded text is ``html``."""
    tree = trafilatura.load_html(html[:MAX_HTML])
    if tree is None:
        return Document("page", url, problem="no_text")
    title = title_of(tree)
    published, source = page_date(tree, url, today)
    links = discover(tree, url)
    scripted = bool(tree.xpath(_SCRIPTS))
    hide(tree)
    bound(tree)
    text = main_text(tree, url)
    needs_browser = (
        scripted and not text and (_visible_words(tree) < FEW_WORDS or _asks_for_javascript(tree))
    )
    return Document(
        "page",
        url,
        title=title,
        text=text,
        published_at=published,
        date_source=source,
        links=links,
        needs_browser=needs_browser,
        problem="no_text" if not text and not needs_browser else None,
    )
