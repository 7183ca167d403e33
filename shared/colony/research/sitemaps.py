"""A sitemap (sitemaps.org 0.9), read: a ``<urlset>``'s URLs as items with their
``<lastmod>``, and as classified same-site links; a ``<sitemapindex>``'s sitemaps as links.

XML here is hostile input: it is parsed by ``defusedxml`` (expat with entity declarations
and external references refused, so a billion-laughs document fails at its first
declaration instead of expanding), and the reader's own pre-check refuses a document that
declares entities before any parser sees it. Only same-site URLs are kept: a sitemap speaks
for its own site (sitemaps.org's cross-submission through robots.txt is not followed).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from colony.research import dates
from colony.research.document import MAX_LINKS, Document, Item, Link, listing
from colony.research.links import rank
from colony.research.urls import kind_of, normalise, same_site

MAX_ENTRIES = 50_000  # sitemaps.org's own limit per file
_PROLOG = re.compile(r"^\s*<\?xml[^>]*\?>")


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _child_text(element: Element, name: str) -> str:
    for child in element:
        if _local(child.tag) == name:
            return (child.text or "").strip()
    return ""


def read_sitemap(url: str, xml: str, today: date) -> Document:
    """The sitemap at ``url`` whose decoded text is ``xml``."""
    try:
        root = fromstring(_PROLOG.sub("", xml, count=1))
    except DefusedXmlException:
        return Document("sitemap", url, problem="unsafe_xml")
    except ParseError:
        return Document("sitemap", url, problem="malformed_sitemap")
    index = _local(root.tag) == "sitemapindex"
    items: list[Item] = []
    links: list[Link] = []
    seen = {url}
    for entry in root:
        if len(seen) > MAX_ENTRIES:
            break
        if _local(entry.tag) not in ("url", "sitemap"):
            continue
        loc = normalise(_child_text(entry, "loc"), url)
        if loc is None or loc in seen or not same_site(loc, url):
            continue
        seen.add(loc)
        if index:
            links.append(Link(loc, "", "sitemap"))
            continue
        lastmod = dates.published(dates.parse(_child_text(entry, "lastmod")), today)
        items.append(Item(loc, "", "", lastmod))
        links.append(Link(loc, "", kind_of(loc)))
    return replace(listing("sitemap", url, items, "sitemap"), links=rank(links)[:MAX_LINKS])
