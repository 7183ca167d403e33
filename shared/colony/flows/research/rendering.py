"""A page that needs a browser to show its text, shown by one where one is configured (issue
33 item 4).

The reader says when a page shows (almost) no text without JavaScript (``needs_browser``).
Where the research runs with a browser (``deps.renderer``: the research service's image
carries Chromium, ``COLONY_RESEARCH_BROWSER``), such a page is handed to it with the bytes
already fetched; the browser never fetches the page, and what its scripts ask for goes
through the same polite, safe fetcher (``ports.render``). The rendered DOM is read like any
page (its main text, the links its scripts wrote); where that finds no main text, the text a
person is shown is kept.
That text replaces the raw page's empty one, and is stored, cut into passages and embedded
like any text; the screenshot is kept beside it, a PNG named by its sha256. A render that ran
out of time or failed is recorded on the row (``render_outcome``, ``render_detail``) and the
page is kept as fetched. A page whose bytes did not change is not rendered again: its text
is read back from the bucket and its screenshot kept.

Where no browser is configured (the deployed function) nothing here runs: the page is kept as
fetched, marked ``needs_browser``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

from colony import research
from colony.flows.deps import FlowDeps
from colony.ports.web import FetchResult
from colony.research.document import Document, paragraphs
from colony.store.db import Row

MAX_TEXT = 200_000  # characters of a rendered page's visible text kept, as the reader keeps


@dataclass(frozen=True, slots=True)
class Shown:
    """A page as the runner keeps it: the document read (rendered, or as fetched), the
    row's render columns, and the screenshot to store (name, PNG) if one was taken now."""

    doc: Document
    fields: dict[str, Any] = field(default_factory=dict)
    screenshot: tuple[str, bytes] | None = None


def show(
    deps: FlowDeps, result: FetchResult, doc: Document, prefix: str, unchanged: Row | None
) -> Shown:
    """``doc`` (read from ``result``) as a browser shows it, when it needs one and one is
    configured; ``prefix`` is where the source's objects live, ``unchanged`` the previous row
    when the bytes are the same as then."""
    if not doc.needs_browser:
        return Shown(doc)
    if unchanged is not None and unchanged["render_outcome"] == "rendered":
        text = deps.blobs.get(unchanged["text_object"]).decode() if unchanged["text_object"] else ""
        kept = {c: unchanged[c] for c in ("screenshot_object", "screenshot_hash", "render_detail")}
        return Shown(replace(doc, text=text), {"render_outcome": "rendered", **kept})
    renderer = deps.renderer
    if renderer is None:
        return Shown(doc)
    rendered = renderer.render(result.final_url, result.content, charset=result.charset)
    fields: dict[str, Any] = {
        "render_outcome": rendered.outcome,
        "render_detail": rendered.detail[:300],
    }
    if rendered.outcome != "rendered":
        return Shown(doc, fields)
    dom = research.read(result.final_url, "text/html", rendered.html.encode(), rendered.html)
    text = dom.text or paragraphs(rendered.text, MAX_TEXT)
    seen = replace(
        dom,
        kind=doc.kind,
        text=text,
        title=dom.title or doc.title,
        published_at=dom.published_at or doc.published_at,
        date_source=dom.date_source if dom.published_at else doc.date_source,
        needs_browser=True,  # what the page is; the row says it was rendered
        problem=doc.problem,
    )
    png = rendered.screenshot_png
    if not png:
        return Shown(seen, fields)
    digest = hashlib.sha256(png).hexdigest()
    name = f"{prefix}{digest}.png"
    fields.update(screenshot_object=name, screenshot_hash=digest)
    return Shown(seen, fields, (name, png))
