"""Reading the open web for research (issue 33): one fetched response in, one ``Document``
out: its main text, title and publication date, the links worth following (classified,
public job boards turned into their JSON APIs), the items of a feed, job board or sitemap,
whether the page needs a browser, and what was wrong with it. A domain library like
``colony.knowledge``: pure reading, no I/O; the research runner (``colony.flows.research``)
fetches, stores and follows.

Offers: ``read(url, content_type, content, text, *, today=None) -> Document``;
``Document``, ``Link``, ``Item`` and their kinds (``DocumentKind``, ``LinkKind``,
``Problem``); ``normalise(href, base=None)``, ``site(url)``, ``same_site(a, b)`` and
``board_api(url)`` for the runner's frontier; the limits (``MAX_LINKS``, ``MAX_ITEMS``,
``MAX_TEXT``).

Modules: ``reader`` (dispatch by type and root element), ``pages`` (HTML: trafilatura,
dates, hidden text, needs_browser), ``links`` (discovery and ranking), ``urls``
(normalising, sites, kinds, job boards), ``feeds`` (RSS / Atom / RDF via feedparser, JSON
Feed), ``boards`` (Greenhouse, Lever, Ashby JSON), ``sitemaps`` (defusedxml), ``pdfs``
(pypdf, bounded), ``dates``, ``markup``, ``document`` (the data).
"""

from typing import TYPE_CHECKING

from colony.lazy import lazy_names

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.research.document import (
        MAX_ITEMS,
        MAX_LINKS,
        MAX_TEXT,
        Document,
        DocumentKind,
        Item,
        Link,
        LinkKind,
        Problem,
    )
    from colony.research.reader import read
    from colony.research.urls import board_api, normalise, same_site, site

# Loaded on first use (PEP 562): the data and URL helpers do not load lxml, trafilatura,
# feedparser and pypdf (the reader's parsers, most of its import time) with the package.
_DOCUMENT = "colony.research.document"
_URLS = "colony.research.urls"
_HOMES = {
    "MAX_ITEMS": _DOCUMENT,
    "MAX_LINKS": _DOCUMENT,
    "MAX_TEXT": _DOCUMENT,
    "Document": _DOCUMENT,
    "DocumentKind": _DOCUMENT,
    "Item": _DOCUMENT,
    "Link": _DOCUMENT,
    "LinkKind": _DOCUMENT,
    "Problem": _DOCUMENT,
    "read": "colony.research.reader",
    "board_api": _URLS,
    "normalise": _URLS,
    "same_site": _URLS,
    "site": _URLS,
}

__all__ = [
    "MAX_ITEMS",
    "MAX_LINKS",
    "MAX_TEXT",
    "Document",
    "DocumentKind",
    "Item",
    "Link",
    "LinkKind",
    "Problem",
    "board_api",
    "normalise",
    "read",
    "same_site",
    "site",
]

__getattr__ = lazy_names(__name__, _HOMES)
