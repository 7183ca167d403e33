"""Text out of the bits of HTML that feeds and job boards carry (a summary, a description)."""

from __future__ import annotations

import html

from lxml import etree
from lxml.html import fragment_fromstring

from colony.research.document import one_line

_BLOCKS = frozenset({"p", "div", "li", "br", "h1", "h2", "h3", "h4", "h5", "h6", "tr"})


def html_text(markup: str | None, limit: int, *, escaped: bool = False) -> str:
    """The text of an HTML fragment, on one line, at most ``limit`` characters. ``escaped``:
    the markup itself arrives entity-escaped (Greenhouse's ``content``)."""
    if not markup:
        return ""
    source = html.unescape(markup) if escaped else markup
    if "<" not in source:
        return one_line(html.unescape(source), limit)
    try:
        root = fragment_fromstring(source[: limit * 20], create_parent="div")
    except (etree.ParserError, ValueError):
        return ""
    for element in root.iter(*_BLOCKS):  # a block's words stay apart from its neighbours'
        element.text = " " + (element.text or "")
        element.tail = " " + (element.tail or "")
    return one_line(root.text_content(), limit)
