"""A page that needs a browser to show its text, shown by one (issue 33 item 4).

``PageRenderer.render`` is handed a page we already fetched (its URL and bytes) and answers
one ``Rendered``: what a person would see once its scripts ran (the DOM and its visible
text) and a screenshot. It never raises for what the page does (spins, waits, asks for the
metadata server): the answer's ``outcome`` says what happened. The renderer never lets the
browser reach the network itself: the page's own document is the bytes given, and every
request its scripts make is answered by the renderer (a few same-site scripts and XHRs
through the same polite, safe fetcher as any page; everything else refused), so each
``SubRequest`` tells what the page asked for and what it got.

Adapter: ``colony.adapters.chromium.ChromiumRenderer`` (headless Chromium over the DevTools
protocol); fake: ``colony.testing.page_renderer.StaticRenderer``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

RenderOutcome = Literal[
    "rendered",  # the page loaded and its scripts ran within the budget: text and screenshot
    "timeout",  # the render's wall-clock deadline passed: the browser was stopped there
    "failed",  # the browser would not start, crashed, or the page never loaded
]
SubVerdict = Literal[
    "fetched",  # fetched through the polite, safe fetcher and handed to the page
    "refused",  # not asked for: another site, a kind we never fetch, over the budget
    "failed",  # asked for, and the fetch came to something other than a page (its outcome)
]


@dataclass(frozen=True, slots=True)
class SubRequest:
    """One request the page made while it rendered: ``url``, what the browser wanted it for
    (``kind``: Script, XHR, Fetch, Image, Document...), and what became of it (``detail``:
    why, in a few words; never the page's text)."""

    url: str
    kind: str
    verdict: SubVerdict
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Rendered:
    """What rendering a page came to. ``html`` is the DOM once its scripts ran, ``text``
    what a person is shown of it (hidden text is not), ``screenshot_png`` the viewport as a
    PNG; all three empty unless ``outcome`` is ``rendered``. ``detail`` says why in a few
    words; ``seconds`` is the wall-clock time the render took."""

    outcome: RenderOutcome
    html: str = ""
    text: str = ""
    screenshot_png: bytes = b""
    requests: tuple[SubRequest, ...] = ()
    detail: str = ""
    seconds: float = 0.0


@runtime_checkable
class PageRenderer(Protocol):
    """Shows a fetched page in a browser that never touches the network itself."""

    def render(self, url: str, html: bytes, *, charset: str | None = None) -> Rendered:
        """Render ``html`` (the bytes fetched from ``url``, decoded with ``charset`` when
        given) as the page at ``url``: relative links, same-site checks and the page's own
        ``location`` are ``url``'s. Never raises for what the page does."""
        ...
