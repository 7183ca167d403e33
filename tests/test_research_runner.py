"""The research runner (issue 33 items 1, 2 and 4) against the stand-in web over real HTTP,
the real polite and safe fetcher, the real embedded PostgreSQL and the GCS emulator: what a
company's research fetches and keeps with its provenance, freshness and conditional
requests on research again, and every hard case as a recorded, explained outcome."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from colony.adapters.web import Limits
from colony.errors import ValidationFailed
from colony.flows.research import requests as research
from colony.store import fetch_all, fetch_one
from colony.testing.web.cases import NO_WEBSITE
from colony.testing.web.pages import Page, Site
from colony.testing.web.sites import company_sites
from colony.testing.web_server import WebServer
from tests.conftest import Gcs, PgDB
from tests.research_world import GAP, drain, research_deps

ORG = "org_research_a"
OTHER = "org_research_b"
MERCY = "mercyridge.test"
NEWS = [
    ("2026-11-02", "Mercy Ridge opens two new clinics", "Two clinics open in Delaware, Ohio."),
    ("2024-03-01", "Mercy Ridge marks a milestone", "An older story from long ago."),
]
JOBS = [("Revenue Cycle Manager", "2026-11-20")]


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer(seed=7, drip_gap=0.05, drip_limit=3.0) as server:
        server.add_company(MERCY, "Mercy Ridge", news=NEWS, jobs=JOBS, job_board="greenhouse")
        yield server


def orgs(testdb: PgDB) -> None:
    def insert(conn) -> None:
        cur = conn.cursor()
        for org in (ORG, OTHER):
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
        conn.commit()

    testdb.as_owner(insert)


def researched(testdb: PgDB, gcs: Gcs, web: WebServer, company: str = MERCY):
    """The two orgs, and ``company`` researched for ``ORG`` to the end of its pass."""
    orgs(testdb)
    deps, transport = research_deps(testdb.app(), web, gcs.store)
    research.request(deps, ORG, company, requested_by="u1")
    return deps, transport, drain(deps, transport)


def sources(deps, org: str = ORG) -> list[dict]:
    with deps.db.transaction(org) as cur:
        return fetch_all(cur, "SELECT * FROM research_sources ORDER BY role, url")


def age(testdb: PgDB, source_id: str) -> None:
    """The source was downloaded a year before the tests' clock (retention's to expire)."""

    def update(conn) -> None:
        conn.cursor().execute(
            "UPDATE research_sources SET downloaded_at = '2025-11-01', fetched_at = '2025-11-01'"
            " WHERE id = %s",
            (source_id,),
        )
        conn.commit()

    testdb.as_owner(update)


def test_a_company_is_researched_and_every_page_kept_with_its_provenance(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    orgs(testdb)
    deps, transport = research_deps(testdb.app(), web, gcs.store)
    assert research.request(deps, ORG, "https://www.MercyRidge.test/about", requested_by="u1") == (
        "started"
    )
    answers = drain(deps, transport)
    assert answers[-1]["status"] == "finished" and answers[-1]["outcome"] == "researched"
    kept = sources(deps)
    by_role: dict[str, list[dict]] = {}
    for s in kept:
        by_role.setdefault(s["role"], []).append(s)
    # the https home page cannot be reached on the (plain HTTP) stand-in: http is tried next
    assert {s["outcome"] for s in by_role["home"]} == {"unreachable", "ok"}
    for role in ("about", "leadership", "locations", "news", "careers", "feed", "sitemap"):
        assert [s["outcome"] for s in by_role[role]] == ["ok"], role
    assert by_role["job_board"][0]["kind"] == "job_board"
    assert by_role["pdf"][0]["kind"] == "pdf" and by_role["pdf"][0]["text_chars"] > 0
    articles = by_role["article"]
    assert {a["published_at"].isoformat() for a in articles} >= {"2026-11-02"}
    # provenance: the bytes and the text in the bucket under the org's folder, named by hash
    for s in kept:
        if s["outcome"] != "ok":
            assert s["raw_object"] is None
            continue
        assert s["raw_object"].startswith(f"research/{ORG}/{s['id']}/")
        raw = gcs.store.get(s["raw_object"])
        assert hashlib.sha256(raw).hexdigest() == s["content_hash"]
        if s["text_object"] is None:  # a sitemap: URLs, no text
            assert s["kind"] == "sitemap" and s["text_chars"] == 0 and s["text_hash"] is None
            continue
        text = gcs.store.get(s["text_object"]).decode()
        assert hashlib.sha256(text.encode()).hexdigest() == s["text_hash"]
        assert len(text) == s["text_chars"]
    with deps.db.transaction(ORG) as cur:
        passages = fetch_all(cur, "SELECT source_id, text FROM research_passages")
    assert passages and all(p["text"].strip() for p in passages)
    seen = web.counters()
    assert seen.robots_violations == 0 and seen.refused_address == 0
    assert max(seen.max_in_flight.values()) == 1
    assert min(seen.shortest_gap.values(), default=1.0) >= GAP  # the pace held, per site


def test_research_again_fetches_nothing_within_freshness_and_only_304s_after(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    deps, transport, _ = researched(testdb, gcs, web)
    first = {s["url"]: s for s in sources(deps)}
    before = web.counters().requests
    assert research.request(deps, ORG, MERCY, requested_by="u1") == "ready"
    assert drain(deps, transport) == [] and web.counters().requests == before
    # past the window (forced here): every unchanged page is asked conditionally, none sent
    assert research.request(deps, ORG, MERCY, requested_by="u1", force=True) == "started"
    assert drain(deps, transport)[-1]["outcome"] == "researched"
    again = {s["url"]: s for s in sources(deps)}
    read_again = [u for u, s in again.items() if s["pass"] == 2 and s["outcome"] == "ok"]
    assert read_again == []
    assert all(
        again[u]["outcome"] == "not_modified" for u, s in first.items() if s["outcome"] == "ok"
    )
    assert web.counters().not_modified >= sum(s["outcome"] == "ok" for s in first.values())


def test_a_page_that_fails_on_research_again_keeps_its_stored_copy(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    """A 5xx on research again is not the page's end: the row says what the fetch came to,
    while the copy, its validators and passages stand; the next pass asks for it
    conditionally (a 304), nothing downloaded again (found by ``bench/research.py``)."""
    deps, transport, _ = researched(testdb, gcs, web)
    site, _www = company_sites(web.companies[MERCY])
    kept = next(s for s in sources(deps) if s["role"] == "about")
    assert kept["outcome"] == "ok" and kept["text_object"] and kept["etag"]

    def passages() -> int:
        with deps.db.transaction(ORG) as cur:
            row = fetch_one(
                cur,
                "SELECT count(*) AS n FROM research_passages WHERE source_id = %s",
                (kept["id"],),
            )
        return int(row["n"]) if row else 0

    before = passages()
    down = Site(site.host, {**site.pages, "/about": Page(b"down", status=503)}, site.robots)
    web.add_site(down)
    research.request(deps, ORG, MERCY, requested_by="u1", force=True)
    assert drain(deps, transport)[-1]["outcome"] == "researched"
    failed = next(s for s in sources(deps) if s["id"] == kept["id"])
    assert (failed["outcome"], failed["status"], failed["pass"]) == ("http_error", 503, 2)
    for column in ("raw_object", "text_object", "content_hash", "etag", "downloaded_at"):
        assert failed[column] == kept[column], column
    assert passages() == before > 0
    assert gcs.store.get(kept["text_object"])  # the copy a signal links to is still there

    web.add_site(site)  # back up, unchanged
    web.reset()
    research.request(deps, ORG, MERCY, requested_by="u1", force=True)
    drain(deps, transport)
    (asked,) = [r for r in web.requests if r.host == MERCY and r.path == "/about"]
    assert asked.header("if-none-match") == kept["etag"] and asked.status == 304
    again = next(s for s in sources(deps) if s["id"] == kept["id"])
    assert again["outcome"] == "not_modified" and again["downloaded_at"] == kept["downloaded_at"]


def test_orgs_research_apart(testdb: PgDB, gcs: Gcs, web: WebServer) -> None:
    deps, _, _ = researched(testdb, gcs, web)
    assert sources(deps, OTHER) == []
    assert research.status(deps, OTHER, MERCY)["job"] is None
    assert research.request(deps, OTHER, MERCY, requested_by="u2") == "started"


@pytest.mark.parametrize(
    ("host", "outcome", "expect"),
    [
        ("robots-closed.example", "nothing_read", {"robots_disallowed"}),
        ("gone.example", "nothing_read", {"http_error"}),
        ("redirect-loop.example", "nothing_read", {"redirect_loop", "too_many_redirects"}),
        # another site: followed as a page of its own, and refused before any request
        ("redirect-loopback.example", "nothing_read", {"redirected", "refused_address"}),
        ("redirect-metadata.example", "nothing_read", {"redirected", "refused_address"}),
        ("redirect-internal.example", "nothing_read", {"redirected", "refused_address"}),
        ("huge-page.example", "nothing_read", {"too_large"}),
        ("never-ends.example", "no_website", {"timeout"}),
        (NO_WEBSITE, "no_website", {"unreachable"}),
    ],
)
def test_a_site_that_cannot_be_read_is_a_recorded_outcome(
    testdb: PgDB, gcs: Gcs, web: WebServer, host: str, outcome: str, expect: set[str]
) -> None:
    orgs(testdb)
    limits = Limits(deadline=2.0, read_timeout=1.0, connect_timeout=1.0)
    deps, transport = research_deps(testdb.app(), web, gcs.store, limits=limits)
    research.request(deps, ORG, host, requested_by="u1")
    answer = drain(deps, transport)[-1]
    assert answer["status"] == "finished" and answer["outcome"] == outcome
    kept = [s for s in sources(deps) if s["url"].startswith("http://")]
    assert {s["outcome"] for s in kept if s["role"] in ("home", "moved")} <= expect
    assert {s["outcome"] for s in kept} & expect and all(s["detail"] for s in kept)
    assert web.counters().refused_address == 0 and web.counters().robots_violations == 0


@pytest.mark.parametrize(
    ("host", "check"),
    [
        ("needs-js.example", lambda s: s["needs_browser"]),
        ("bad-feed.example", lambda s: s["role"] != "feed" or s["problem"] == "malformed_feed"),
        ("pdf-encrypted.example", lambda s: s["role"] != "pdf" or s["problem"] == "encrypted_pdf"),
        ("pdf-broken.example", lambda s: s["role"] != "pdf" or s["problem"] == "broken_pdf"),
    ],
)
def test_a_page_read_with_a_problem_says_so(
    testdb: PgDB, gcs: Gcs, web: WebServer, host: str, check
) -> None:
    deps, _, _ = researched(testdb, gcs, web, host)
    read = [s for s in sources(deps) if s["outcome"] == "ok"]
    assert read and any(check(s) for s in read if s["role"] in ("home", "feed", "pdf"))


def test_a_company_is_named_by_its_domain(testdb: PgDB, gcs: Gcs, web: WebServer) -> None:
    assert research.domain_of("https://WWW.Example.COM:443/about?x=1") == "example.com"
    assert research.domain_of("bücher.de") == "xn--bcher-kva.de"
    not_companies = ("metadata.google.internal", "api.localhost", "1.0.0.127.in-addr.arpa", "[::1")
    for bad in ("127.0.0.1", "localhost", "", "  ", "http://[::1]/", "a..b.com", *not_companies):
        assert research.domain_of(bad) is None, bad
    orgs(testdb)
    deps, _ = research_deps(testdb.app(), web, gcs.store)
    with pytest.raises(ValidationFailed, match="not a company domain"):
        research.request(deps, ORG, "169.254.169.254", requested_by="u1")


def test_retention_deletes_pages_kept_past_the_orgs_period(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    from colony.flows.tenants import retention

    deps, _, _ = researched(testdb, gcs, web)
    kept = [s for s in sources(deps) if s["raw_object"]]
    old = kept[0]
    age(testdb, old["id"])
    report = retention.enforce(deps, ORG)
    assert report["expired"]["research"] == 1 and report["days"]["research"] == 180
    left = {s["id"] for s in sources(deps)}
    assert old["id"] not in left and len(left) == len(sources(deps))
    names = set(gcs.store.names(f"research/{ORG}/"))
    assert old["raw_object"] not in names and kept[1]["raw_object"] in names


def test_a_pass_whose_tasks_were_lost_is_woken_by_the_next_request(
    testdb: PgDB, gcs: Gcs, web: WebServer
) -> None:
    """A running pass no task has touched for half an hour (its task's retries ran out): the
    next request for the company wakes it with a task of its own, and its waiters go on."""
    orgs(testdb)
    deps, transport = research_deps(testdb.app(), web, gcs.store)
    assert research.request(deps, ORG, MERCY, requested_by="u1") == "started"
    transport.tasks.clear()  # the first task is lost

    def idle_for_an_hour(conn) -> None:
        conn.cursor().execute("UPDATE research_jobs SET touched_at = now() - interval '1 hour'")
        conn.commit()

    waiter = research.Waiter(key="k1", topic="colony-enrichment", data="{}", attributes={})
    assert research.request(deps, ORG, MERCY, requested_by="u2", waiter=waiter) == "running"
    assert transport.tasks == {}  # touched just now: a task may still be on its way
    testdb.as_owner(idle_for_an_hour)
    assert research.request(deps, ORG, MERCY, requested_by="u2", waiter=waiter) == "running"
    [task] = transport.tasks.values()
    assert task.task_id.endswith("-1-1")  # pass 1, its first wake
    finished = drain(deps, transport)[-1]
    assert finished["outcome"] == "researched" and finished["released"] == 1
    assert [m.topic for m in transport.pending] == ["colony-enrichment"]
