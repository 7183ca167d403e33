"""``ChromiumRenderer`` (issue 33 item 4) against Debian's Chromium and the stand-in web over
real HTTP, sub-requests through the real polite, safe fetcher over the embedded PostgreSQL:
a page that needs JavaScript shows its text and a screenshot; a hostile page's reaches for
loopback, the metadata server and another site reach nothing (counted at the stand-in, which
listens on 127.0.0.1 and counts every request that arrives); the browser on its own reaches
no network; a render past its deadline is an outcome, with the browser gone. Nothing is
mocked; a missing Chromium fails these tests (``make browser`` installs it)."""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from colony.adapters.chromium import (
    ChromiumRenderer,
    RenderLimits,
    flags,
    profile_parent,
    renderer_from_settings,
)
from colony.adapters.devtools import DevTools
from colony.adapters.polite_web import fetch_waiting
from colony.errors import ConfigError
from colony.ports import FetchResult
from colony.runtime.compose.research import parts as research_parts
from colony.settings import Settings
from colony.testing.web.cases import JS_TEXT
from colony.testing.web.scripted import ANOTHER_SITE, HOSTILE_JS_TEXT
from colony.testing.web_fetcher import FakeWebFetcher
from colony.testing.web_server import WebServer
from tests.conftest import PgDB
from tests.research_world import chromium, fetcher, renderer

PNG = b"\x89PNG\r\n\x1a\n"
DEADLINE = 8.0  # seconds, for the renders that never finish (a busy machine starts the browser
# slowly, and a script asked for with under a second left is refused, not waited on)


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer(seed=3, drip_gap=0.05, drip_limit=10.0) as server:
        yield server


@pytest.fixture
def short_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary directory of this test's own for the render's profile, so its processes
    can be found by it (short: Chromium's socket path under it must fit 107 bytes)."""
    found = Path(tempfile.mkdtemp(prefix="colony-t-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(found))
    yield found
    shutil.rmtree(found, ignore_errors=True)


def fetched(testdb: PgDB, web: WebServer, url: str) -> FetchResult:
    """The page as the research runner fetched it; the stand-in's record starts after."""
    page = fetch_waiting(fetcher(testdb.app(), web), url)
    assert page.outcome == "ok", page
    web.reset()
    return page


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG) and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_a_page_that_needs_javascript_shows_its_text_and_a_screenshot(
    testdb: PgDB, web: WebServer
) -> None:
    page = fetched(testdb, web, "http://needs-js.example/")
    assert JS_TEXT not in (page.text or "")  # a script writes it
    shown = renderer(testdb.app(), web).render(page.final_url, page.content, charset=page.charset)
    assert (shown.outcome, shown.detail) == ("rendered", "0 fetched, 1 not"), shown.detail
    assert JS_TEXT in shown.text and JS_TEXT in shown.html
    assert png_size(shown.screenshot_png) == (1280, 1000)
    # its document was the bytes we hold: the browser asked the web for nothing
    assert web.requests == []
    assert [(r.kind, r.verdict) for r in shown.requests] == [("Other", "refused")]  # favicon
    assert 0 < shown.seconds < RenderLimits().deadline


def test_a_hostile_page_reaches_nothing_but_a_few_of_its_own_sites_files(
    testdb: PgDB, web: WebServer
) -> None:
    page = fetched(testdb, web, "http://hostile-js.example/")
    shown = renderer(testdb.app(), web).render(page.final_url, page.content)
    assert shown.outcome == "rendered", shown.detail
    # its same-site script and data came through our fetcher; its four reaches were blocked
    assert HOSTILE_JS_TEXT in shown.text and "4 of 4 reaches blocked." in shown.text
    refused = {r.url for r in shown.requests if r.verdict == "refused"}
    loopback = f"http://127.0.0.1:{web.port}"
    assert {
        f"{loopback}/stolen",
        f"{loopback}/pixel",
        f"{loopback}/frame",
        f"{loopback}/worker",
        "http://169.254.169.254/computeMetadata/v1/",
        "http://metadata.google.internal/computeMetadata/v1/",
        f"http://{ANOTHER_SITE}/",
        "http://hostile-js.example/beacon",  # a POST
    } <= refused
    # counted where they would have arrived: nothing reached loopback, a forbidden name or
    # another site; the site itself got GETs of its script and data, by us, at its pace
    seen = web.counters()
    assert seen.refused_address == 0 and seen.robots_violations == 0
    assert set(seen.per_host) == {"hostile-js.example"}
    asked = [r for r in web.requests if r.target != "/robots.txt"]
    assert {r.method for r in asked} == {"GET"}
    assert all(r.headers["user-agent"].startswith("ColonyResearch/1.0") for r in asked)
    assert {r.target.split("?")[0] for r in asked} == {"/app.js", "/data.json"}
    assert len(asked) == RenderLimits().sub_requests  # the page's budget, then refusals
    over = [r for r in shown.requests if "over the page's" in r.detail]
    assert len(over) == 7  # 17 same-site fetches asked for, 10 fetched
    assert seen.max_in_flight == {"hostile-js.example": 1}


def test_the_browser_alone_reaches_no_network(web: WebServer) -> None:
    """The backstop under the Fetch domain: with the renderer's flags and no interception at
    all, a navigation to loopback, a stand-in name or an address, a fetch and a WebSocket
    all fail inside the browser; the stand-in counts nothing."""
    # a short profile path, as the renderer makes one: the browser's singleton socket lives
    # under it and a socket path is at most 107 bytes (pytest-xdist's tmp_path is longer)
    with (
        socket.socket() as hole,
        tempfile.TemporaryDirectory(prefix="colony-render-", dir=profile_parent()) as profile,
    ):
        hole.bind(("127.0.0.1", 0))
        deadline = time.monotonic() + 20.0
        command = flags(profile, hole.getsockname()[1], RenderLimits())
        browser = DevTools.launch(chromium(), command, profile, deadline)
        try:
            target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
                "sessionId"
            ]
            errors = []
            for url in (
                f"http://127.0.0.1:{web.port}/direct",
                f"http://{ANOTHER_SITE}/",
                "http://169.254.169.254/computeMetadata/v1/",
            ):
                answer = browser.call("Page.navigate", {"url": url}, session)
                errors.append(answer.get("errorText"))
            probe = (
                f"Promise.all([fetch('http://127.0.0.1:{web.port}/fetch').then(() => 'reached',"
                " () => 'failed'), new Promise((done) => { const s = new WebSocket("
                f"'ws://127.0.0.1:{web.port}/socket'); s.onopen = () => done('reached');"
                " s.onerror = () => done('failed'); })]).then((r) => r.join())"
            )
            found = browser.call(
                "Runtime.evaluate",
                {"expression": probe, "awaitPromise": True, "returnByValue": True},
                session,
            )
        finally:
            browser.close()
    assert all(e and e.startswith("net::ERR_") for e in errors), errors
    assert found["result"]["value"] == "failed,failed"
    assert web.requests == []


@pytest.mark.parametrize(
    ("host", "stage"),
    [("spinning-js.example", "loading the page"), ("slow-js.example", "fetching")],
)
def test_a_render_past_its_deadline_is_an_outcome_not_a_hang(
    testdb: PgDB, web: WebServer, short_tmp: Path, host: str, stage: str
) -> None:
    """A script that never returns, a script that never finishes arriving: each render ends
    at its deadline as ``timeout``, saying where it was, and leaves no browser process."""
    page = fetched(testdb, web, f"http://{host}/")
    began = time.monotonic()
    # long enough for the browser to start on a busy machine: the page is where it stops. A
    # script's own fetch may outlast it (slow.js drips for 10 s): the render's deadline, not
    # the fetch's, is what this test meets
    shown = renderer(
        testdb.app(), web, RenderLimits(deadline=DEADLINE), fetch_deadline=3 * DEADLINE
    ).render(page.final_url, page.content)
    took = time.monotonic() - began
    assert shown.outcome == "timeout" and stage in shown.detail, (shown.detail, shown.requests)
    assert f"{DEADLINE:g} s deadline" in shown.detail
    assert (shown.text, shown.screenshot_png) == ("", b"")
    assert DEADLINE <= took < DEADLINE + 2.5  # the deadline, then the browser killed
    assert _processes_naming(str(short_tmp)) == []
    assert list(short_tmp.iterdir()) == []  # the throwaway profile is gone


def test_a_browser_that_will_not_run_is_a_failed_render() -> None:
    shown = ChromiumRenderer("/bin/false", FakeWebFetcher()).render("http://a.example/", b"<p>")
    assert shown.outcome == "failed" and "closed its pipe" in shown.detail
    missing = ChromiumRenderer("/nonexistent/chromium", FakeWebFetcher())
    assert missing.render("http://a.example/", b"<p>").outcome == "failed"


def test_the_renderer_is_configured_by_colony_research_browser(
    testdb: PgDB, tmp_path: Path
) -> None:
    assert renderer_from_settings(Settings.from_env({}), testdb.app()) is None
    found = renderer_from_settings(
        Settings.from_env({"COLONY_RESEARCH_BROWSER": chromium()}), testdb.app()
    )
    assert isinstance(found, ChromiumRenderer) and found.executable == chromium()
    plain = tmp_path / "chromium"
    plain.write_text("not a program")
    plain.chmod(0o644)
    for bad in ("chromium", "/nonexistent/chromium", str(plain)):
        with pytest.raises(ConfigError, match="COLONY_RESEARCH_BROWSER"):
            Settings.from_env({"COLONY_RESEARCH_BROWSER": bad})


def test_the_research_function_loads_no_browser_where_it_has_none(testdb: PgDB) -> None:
    """Composed without ``COLONY_RESEARCH_BROWSER`` (the deployed function), the research
    function has no renderer and never loads the browser's adapter (issue 32 item 4); with
    one, its renderer is Chromium's. A fresh interpreter, since this file loads the adapter."""
    found = research_parts().renderer
    assert found is not None and found(Settings.from_env({}), testdb.app()) is None
    browser = Settings.from_env({"COLONY_RESEARCH_BROWSER": chromium()})
    assert isinstance(found(browser, testdb.app()), ChromiumRenderer)
    probe = (
        "import sys\n"
        "from colony.runtime.compose.research import parts\n"
        "from colony.settings import Settings\n"
        "assert parts().renderer(Settings.from_env({}), None) is None\n"
        "print(*(f'colony.adapters.{m}' in sys.modules for m in ('chromium', 'devtools')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def _processes_naming(text: str) -> list[int]:
    """Processes whose command line holds ``text`` (ours: the render's profile path)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if text.encode() in cmdline.read():
                    found.append(int(entry))
        except OSError:  # gone meanwhile
            continue
    return found
