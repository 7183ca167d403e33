"""The research runner with a browser (issue 33 item 4), against Debian's Chromium, the
stand-in web over real HTTP, the real polite and safe fetcher, the embedded PostgreSQL and the
GCS emulator: a page that needs JavaScript is rendered, its text stored, cut into passages
and embedded like any text, its screenshot kept beside it named by its hash, and retention
deletes it with the rest; a render past its deadline is a recorded outcome and the pass goes
on; without a browser the page is kept as fetched."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from colony.adapters.chromium import RenderLimits
from colony.flows.research import requests as research
from colony.store import fetch_all
from colony.testing.web.cases import JS_TEXT
from colony.testing.web_server import WebServer
from tests.conftest import Gcs, PgDB
from tests.research_world import drain, research_deps
from tests.test_research_runner import ORG, age, orgs, sources

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer(seed=5, drip_gap=0.05, drip_limit=5.0) as server:
        yield server


def home_of(deps) -> dict:
    (home,) = [s for s in sources(deps) if s["role"] == "home" and s["outcome"] == "ok"]
    return home


def test_a_page_that_needs_a_browser_is_rendered_kept_and_embedded(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    from colony.flows.tenants import retention

    orgs(testdb)
    deps, transport = research_deps(testdb.app(), web, gcs.store, render=RenderLimits())
    research.request(deps, ORG, "needs-js.example", requested_by="u1")
    answer = drain(deps, transport)[-1]
    assert (answer["status"], answer["outcome"]) == ("finished", "researched")
    home = home_of(deps)
    assert home["needs_browser"] and home["render_outcome"] == "rendered"
    assert home["render_detail"] == "0 fetched, 1 not"
    # the bytes as fetched (the text is not in them: a script decodes it) ...
    raw = gcs.store.get(home["raw_object"])
    assert hashlib.sha256(raw).hexdigest() == home["content_hash"] and JS_TEXT.encode() not in raw
    # ... the text the browser showed, in place of the raw page's empty one ...
    text = gcs.store.get(home["text_object"]).decode()
    assert JS_TEXT in text and len(text) == home["text_chars"]
    assert hashlib.sha256(text.encode()).hexdigest() == home["text_hash"]
    # ... and the screenshot beside them, named by its hash
    shot = gcs.store.get(home["screenshot_object"])
    digest = hashlib.sha256(shot).hexdigest()
    assert shot.startswith(PNG) and digest == home["screenshot_hash"]
    assert home["screenshot_object"] == f"research/{ORG}/{home['id']}/{digest}.png"
    with deps.db.transaction(ORG) as cur:
        passages = fetch_all(
            cur, "SELECT text FROM research_passages WHERE source_id = %s", (home["id"],)
        )
    assert any(JS_TEXT in p["text"] for p in passages)
    assert web.counters().refused_address == 0 and web.counters().robots_violations == 0
    age(testdb, home["id"])
    assert retention.enforce(deps, ORG)["expired"]["research"] == 1
    left = set(gcs.store.names(f"research/{ORG}/{home['id']}/"))
    assert left == set()  # bytes, text and screenshot


def test_a_render_past_its_deadline_is_recorded_and_the_pass_goes_on(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    orgs(testdb)
    deps, transport = research_deps(testdb.app(), web, gcs.store, render=RenderLimits(deadline=2.0))
    research.request(deps, ORG, "spinning-js.example", requested_by="u1")
    answer = drain(deps, transport)[-1]
    assert answer["status"] == "finished"
    home = home_of(deps)
    assert home["needs_browser"] and home["render_outcome"] == "timeout"
    assert "2 s deadline" in home["render_detail"]
    assert home["screenshot_object"] is None and home["screenshot_hash"] is None
    assert gcs.store.get(home["raw_object"])  # the page is kept as fetched


def test_without_a_browser_the_page_is_kept_as_fetched(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    orgs(testdb)
    deps, transport = research_deps(testdb.app(), web, gcs.store)
    assert deps.renderer is None
    research.request(deps, ORG, "needs-js.example", requested_by="u1")
    drain(deps, transport)
    home = home_of(deps)
    assert home["needs_browser"] and home["render_outcome"] is None
    assert home["screenshot_object"] is None
    stored = [gcs.store.get(s["text_object"]).decode() for s in sources(deps) if s["text_object"]]
    assert not any(JS_TEXT in t for t in stored)
