"""The ``PageRenderer`` port's conformance suite: the fake (``colony.testing.page_renderer``)
and the real ``ChromiumRenderer`` (Debian's Chromium; a missing one fails, ``make browser``)
answer the same cases alike.

The contract (``colony.ports.PageRenderer``): one ``Rendered`` per call, never an exception
for what a page holds; a page whose script writes its text is ``rendered`` with that text in
its DOM and visible text, and a PNG screenshot; anything but ``rendered`` carries no DOM,
text or screenshot, and says why.
"""

from __future__ import annotations

from typing import Any

import pytest

from colony.adapters.chromium import ChromiumRenderer, RenderLimits
from colony.ports import PageRenderer
from colony.testing.page_renderer import StaticRenderer
from colony.testing.web.cases import JS_TEXT, hard_cases
from colony.testing.web_fetcher import FakeWebFetcher
from tests.conformance.exercise import exercised
from tests.research_world import chromium

URL = "http://needs-js.example/"
HOSTILE = b"\x00\xff<html><body><script>throw new Error('no')</script><p>\xe9\xe9"
PNG = b"\x89PNG\r\n\x1a\n"


def needs_js() -> bytes:
    (site,) = [s for s in hard_cases(1, 0.1, 1.0) if s.host == "needs-js.example"]
    return site.pages["/"].body


@pytest.fixture(params=["fake", "real"])
def renderer(request: pytest.FixtureRequest) -> Any:
    if request.param == "fake":
        return StaticRenderer({URL: JS_TEXT})
    # a page with no sub-requests: the fetcher is never asked (the fake one says so if it is)
    return ChromiumRenderer(chromium(), FakeWebFetcher(), limits=RenderLimits(deadline=20.0))


def test_it_is_a_page_renderer(renderer: Any) -> None:
    with exercised(PageRenderer, renderer) as port:
        shown = port.render(URL, needs_js(), charset="utf-8")
    assert shown.outcome == "rendered", shown.detail
    assert JS_TEXT in shown.text and JS_TEXT in shown.html
    assert shown.screenshot_png.startswith(PNG) and shown.detail and shown.seconds >= 0


def test_what_a_page_holds_is_an_outcome_never_an_exception(renderer: Any) -> None:
    shown = renderer.render("http://garbage.example/", HOSTILE)
    assert shown.outcome in ("rendered", "timeout", "failed") and shown.detail
    if shown.outcome != "rendered":
        assert (shown.html, shown.text, shown.screenshot_png) == ("", "", b"")
