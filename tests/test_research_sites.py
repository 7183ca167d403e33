"""Politeness across instances (``colony.store.research.sites``, ``colony.adapters.robots``,
``colony.adapters.polite_web``) against the real embedded PostgreSQL and a real HTTP server
on 127.0.0.1: the site's slot, robots.txt as RFC 9309 reads it, and the pace measured where
it matters, at the server (arrival times, requests in flight)."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from colony.adapters.polite_web import PoliteWebFetcher, fetch_waiting, site_of
from colony.adapters.robots import Robots, origin_of, robots_url
from colony.adapters.web import Limits, SafeFetcher, user_agent
from colony.adapters.web_guard import AddressGuard
from colony.ports.web import FetchResult, WebFetcher
from colony.store.db import Database
from colony.store.research import sites
from tests.conftest import PgDB, wait_for
from tests.little_web import LittleWeb, fenced, page, redirect

AGENT = user_agent("https://colony.example/research")
HOSTS = ("acme.example", "www.acme.example", "beta.example")


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[LittleWeb]:
    yield from fenced(monkeypatch)


def polite(db: Database, web: LittleWeb, **options: float) -> PoliteWebFetcher:
    safe = SafeFetcher(AGENT, guard=AddressGuard(local=web.local(*HOSTS)), limits=Limits())
    return PoliteWebFetcher(db, safe, **options)  # type: ignore[arg-type]


def robots(web: LittleWeb, text: str, host: str = "*") -> None:
    web.routes[host, "/robots.txt"] = page(text.encode(), "text/plain")


def gaps(web: LittleWeb, host: str | None = None) -> list[float]:
    times = sorted(a.at for a in web.record.arrivals if host is None or a.host == host)
    return [b - a for a, b in itertools.pairwise(times)]


# --- the slot, in SQL ------------------------------------------------------------------------


def test_a_site_has_one_holder_and_a_next_allowed_time(testdb: PgDB) -> None:
    db = testdb.app()
    with db.transaction(None) as cur:
        first = sites.claim(cur, "acme.example", "lease-1", 30, 1.0)
        second = sites.claim(cur, "acme.example", "lease-2", 30, 1.0)
        other = sites.claim(cur, "beta.example", "lease-3", 30, 1.0)
    assert first.claimed and other.claimed and not second.claimed
    assert second.retry_at is not None and second.retry_at >= second.now
    with db.transaction(None) as cur:
        assert not sites.renew(cur, "acme.example", "lease-2", 30)  # not the holder
        assert sites.renew(cur, "acme.example", "lease-1", 30)
        sites.release(cur, "acme.example", "lease-2", 0)  # not the holder: nothing
        again = sites.claim(cur, "acme.example", "lease-4", 30, 1.0)
        assert not again.claimed
        sites.release(cur, "acme.example", "lease-1", 60)
        after = sites.claim(cur, "acme.example", "lease-5", 30, 1.0)
    assert not after.claimed and after.retry_at is not None
    assert 59 < (after.retry_at - after.now).total_seconds() <= 60


def test_a_lease_its_holder_never_released_lapses(testdb: PgDB) -> None:
    db = testdb.app()
    with db.transaction(None) as cur:
        assert sites.claim(cur, "acme.example", "crashed", 0.3, 1.0).claimed

    def free() -> bool:
        with db.transaction(None) as cur:
            return sites.claim(cur, "acme.example", "next", 30, 1.0).claimed

    assert wait_for(free, timeout=5, what="the lapsed lease")
    with db.transaction(None) as cur:
        assert not sites.renew(cur, "acme.example", "crashed", 30)


def test_of_many_simultaneous_claims_on_separate_connections_exactly_one_wins(
    testdb: PgDB,
) -> None:
    pools = [testdb.app() for _ in range(2)]  # two instances, each with its own pool
    won: list[str] = []
    start = threading.Barrier(8)

    def claim(n: int) -> None:
        start.wait()
        with pools[n % 2].transaction(None) as cur:
            if sites.claim(cur, "fresh.example", f"lease-{n}", 30, 1.0).claimed:
                won.append(f"lease-{n}")

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1


def test_research_tables_belong_to_no_org(testdb: PgDB) -> None:
    rows = testdb.owner_rows(
        "SELECT relname, relrowsecurity FROM pg_class WHERE relname IN"
        " ('research_sites', 'research_robots') ORDER BY relname"
    )
    assert rows == [
        {"relname": "research_robots", "relrowsecurity": False},
        {"relname": "research_sites", "relrowsecurity": False},
    ]


# --- robots.txt ------------------------------------------------------------------------------


def test_robots_rules_for_our_agent() -> None:
    def fetched(outcome: str, status: int | None, text: str | None = None) -> Robots:
        return Robots.from_fetch(
            FetchResult("u", "u", outcome, fetched_at=None, status=status, text=text)  # type: ignore[arg-type]
        )

    news = fetched("ok", 200, "User-agent: *\nDisallow: /news\n")
    assert not news.allows("http://acme.example/news/2026")
    assert news.allows("http://acme.example/about")
    ours = fetched(
        "ok",
        200,
        "User-agent: *\nDisallow: /\n\nUser-agent: ColonyResearch\nAllow: /\nCrawl-delay: 3\n",
    )
    assert ours.allows("http://acme.example/news") and ours.crawl_delay() == 3.0
    assert fetched("http_error", 404).allows("http://acme.example/anything")
    assert fetched("http_error", 403).allows("http://acme.example/anything")
    for outcome, status in [
        ("http_error", 500),
        ("http_error", 503),
        ("unreachable", None),
        ("timeout", None),
        ("refused_address", None),
    ]:
        assert not fetched(outcome, status).allows("http://acme.example/")
    assert robots_url("https://www.acme.example/a/b?c=1#d") == "https://www.acme.example/robots.txt"
    assert origin_of("http://WWW.Acme.example:80/x") == "http://www.acme.example"
    assert site_of("https://www.acme.example/x") == "acme.example"


@pytest.mark.parametrize(
    ("robots_route", "allowed", "refused"),
    [
        (page(b"User-agent: *\nDisallow: /\n", "text/plain"), [], ["/", "/about"]),
        (page(b"User-agent: *\nDisallow: /news\n", "text/plain"), ["/about"], ["/news/1"]),
        (
            page(b"User-agent: ColonyResearch\nDisallow: /\n\nUser-agent: *\nAllow: /\n"),
            [],
            ["/about"],
        ),
        (page(b"gone", status=404), ["/about", "/news/1"], []),
        (page(b"down", status=503), [], ["/about"]),
        (redirect("http://127.0.0.1:9/robots.txt"), [], ["/about"]),  # refused: as unreachable
        (redirect("http://beta.example/robots.txt"), [], ["/about"]),  # another site's file
        (redirect("http://www.acme.example/robots.txt"), ["/about"], []),  # same site: followed
    ],
)
def test_a_url_robots_txt_refuses_is_never_requested(
    robots_route: object, allowed: list[str], refused: list[str], testdb: PgDB, web: LittleWeb
) -> None:
    web.routes["*", "/robots.txt"] = robots_route  # type: ignore[assignment]
    web.routes["www.acme.example", "/robots.txt"] = page(b"User-agent: *\nAllow: /\n")
    for path in ["/", "/about", "/news/1"]:
        web.routes["*", path] = page(b"<p>page</p>")
    fetcher = polite(testdb.app(), web, gap=0.05)
    for path in refused:
        result = fetch_waiting(fetcher, f"http://acme.example{path}")
        assert result.outcome == "robots_disallowed", result
    for path in allowed:
        assert fetch_waiting(fetcher, f"http://acme.example{path}").outcome == "ok"
    requested = [a.path for a in web.record.arrivals if a.host == "acme.example"]
    assert requested.count("/robots.txt") == 1  # once per freshness window
    assert not set(refused) & set(requested)
    assert set(requested) == {"/robots.txt", *allowed}


def test_robots_txt_is_fetched_once_for_every_instance(testdb: PgDB, web: LittleWeb) -> None:
    robots(web, "User-agent: *\nDisallow: /private\n")
    web.routes["*", "/a"] = page(b"<p>a</p>")
    web.routes["*", "/b"] = page(b"<p>b</p>")
    one, two = polite(testdb.app(), web, gap=0.05), polite(testdb.app(), web, gap=0.05)
    assert fetch_waiting(one, "http://acme.example/a").outcome == "ok"
    assert fetch_waiting(two, "http://acme.example/b").outcome == "ok"
    assert fetch_waiting(two, "http://acme.example/private").outcome == "robots_disallowed"
    assert web.record.paths() == ["/robots.txt", "/a", "/b"]
    # www. is the same site (one pace) but another origin (its own robots.txt)
    assert fetch_waiting(two, "http://www.acme.example/a").outcome == "ok"
    assert web.record.paths()[-2:] == ["/robots.txt", "/a"]


# --- the pace --------------------------------------------------------------------------------


def test_a_busy_site_answers_wait_until_instead_of_sleeping(testdb: PgDB, web: LittleWeb) -> None:
    robots(web, "User-agent: *\nAllow: /\n")
    web.routes["*", "/a"] = page(b"<p>a</p>")
    fetcher = polite(testdb.app(), web)
    assert fetch_waiting(fetcher, "http://acme.example/a").outcome == "ok"
    started = time.monotonic()
    result = fetcher.fetch("http://acme.example/a")
    assert time.monotonic() - started < 0.5  # answered, not slept
    assert result.outcome == "wait" and result.retry_at is not None
    assert 0 < (result.retry_at - result.fetched_at).total_seconds() <= 1.0
    assert web.record.paths() == ["/robots.txt", "/a"]  # the refused turn sent nothing
    # another site is not held up by this one
    robots(web, "", host="beta.example")
    web.routes["beta.example", "/"] = page(b"<p>beta</p>")
    assert fetcher.fetch("http://beta.example/").outcome in ("ok", "wait")


def test_one_request_in_flight_and_a_second_apart_across_threads_and_instances(
    testdb: PgDB, web: LittleWeb
) -> None:
    robots(web, "User-agent: *\nAllow: /\n")
    for n in range(4):
        web.routes["*", f"/p{n}"] = page(b"<p>page</p>", delay=0.3)  # a slow page invites overlap
    instances = [polite(testdb.app(), web), polite(testdb.app(), web)]  # separate pools
    results: list[FetchResult] = []
    start = threading.Barrier(4)

    def visit(n: int) -> None:
        fetcher: WebFetcher = instances[n % 2]
        start.wait()
        results.append(fetch_waiting(fetcher, f"http://acme.example/p{n}", max_wait=20))

    threads = [threading.Thread(target=visit, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.outcome for r in results) == ["ok"] * 4
    assert web.record.most_in_flight == 1
    assert len(web.record.arrivals) == 5  # robots.txt once, each page once
    assert min(gaps(web)) >= 1.0, gaps(web)


def test_a_larger_crawl_delay_is_honoured_and_a_smaller_one_is_not_used(
    testdb: PgDB, web: LittleWeb
) -> None:
    robots(web, "User-agent: ColonyResearch\nCrawl-delay: 1.5\nAllow: /\n")
    robots(web, "User-agent: *\nCrawl-delay: 0.1\n", host="beta.example")
    for host in ("acme.example", "beta.example"):
        web.routes[host, "/a"] = page(b"<p>a</p>")
        web.routes[host, "/b"] = page(b"<p>b</p>")
    fetcher = polite(testdb.app(), web, gap=0.5)
    for host in ("acme.example", "beta.example"):
        for path in ("/a", "/b"):
            assert fetch_waiting(fetcher, f"http://{host}{path}").outcome == "ok"
    assert min(gaps(web, "acme.example")) >= 1.5
    assert min(gaps(web, "beta.example")) >= 0.5


def test_redirects_on_the_site_are_paced_and_checked_and_another_site_is_left_to_the_runner(
    testdb: PgDB, web: LittleWeb
) -> None:
    robots(web, "User-agent: *\nDisallow: /private\n")
    web.routes["*", "/old"] = redirect("http://acme.example/new", 301)
    web.routes["*", "/new"] = page(b"<p>new</p>")
    web.routes["*", "/sneaky"] = redirect("/private/x")
    web.routes["*", "/away"] = redirect("http://beta.example/")
    fetcher = polite(testdb.app(), web, gap=0.3)
    moved = fetch_waiting(fetcher, "http://acme.example/old")
    assert (moved.outcome, moved.final_url) == ("ok", "http://acme.example/new")
    assert min(gaps(web)) >= 0.3
    sneaky = fetch_waiting(fetcher, "http://acme.example/sneaky")
    assert sneaky.outcome == "robots_disallowed"
    away = fetch_waiting(fetcher, "http://acme.example/away")
    assert (away.outcome, away.final_url) == ("redirected", "http://beta.example/")
    assert "/private/x" not in web.record.paths()
    assert not [a for a in web.record.arrivals if a.host == "beta.example"]


def test_refusals_need_no_slot_and_send_nothing(testdb: PgDB, web: LittleWeb) -> None:
    fetcher = polite(testdb.app(), web)
    for url in ("http://169.254.169.254/", "ftp://acme.example/", "not a url", "http://[::1]/"):
        assert fetcher.fetch(url).outcome in (
            "refused_address",
            "refused_scheme_or_port",
            "bad_url",
        )
    assert web.record.arrivals == []
    assert testdb.owner_rows("SELECT site FROM research_sites") == []


def test_a_lease_lost_mid_visit_ends_the_visit(testdb: PgDB, web: LittleWeb) -> None:
    robots(web, "User-agent: *\nAllow: /\n")
    web.routes["*", "/a"] = page(b"<p>a</p>")
    fetcher = polite(testdb.app(), web, gap=0.05)

    def steal(cur_site: str, lease: str) -> bool:  # another instance took the lapsed slot
        testdb.as_owner(
            lambda conn: (
                conn.cursor().execute(
                    "UPDATE research_sites SET lease_id = %s WHERE site = %s",
                    (uuid.uuid4().hex, cur_site),
                ),
                conn.commit(),
            )
        )
        return False

    fetcher.renew = steal  # type: ignore[method-assign]
    result = fetcher.fetch("http://acme.example/a")
    assert result.outcome == "wait"
    assert web.record.arrivals == []
