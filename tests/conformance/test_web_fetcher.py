"""The ``WebFetcher`` port's conformance suite: the fake (``colony.testing.web_fetcher``) and
the real ``PoliteWebFetcher`` (robots.txt and the per-site pace in the embedded PostgreSQL,
``SafeFetcher`` over a real HTTP server on 127.0.0.1) answer the same cases alike.

The contract (``colony.ports.WebFetcher``): one ``FetchResult`` per call and never an
exception for what a site does; ``ok`` with the decoded text of an accepted type; a 304 to
our validators is ``not_modified`` (``ok`` true); an error status is ``http_error`` with it;
a type we do not read is ``bad_type``; a URL robots.txt refuses, and an address we never
connect to, are answered without a request.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from colony.adapters.polite_web import PoliteWebFetcher, fetch_waiting
from colony.adapters.web import SafeFetcher, user_agent
from colony.adapters.web_guard import AddressGuard
from colony.ports import FetchResult, WebFetcher
from colony.testing.web_fetcher import FakePage, FakeWebFetcher
from tests.conformance.exercise import exercised
from tests.conftest import PgDB
from tests.little_web import LittleWeb, only_loopback, page

SITE = "http://acme.example"
JAPANESE = "株式会社アクメは東京に本社を置き、新しい物流センターを大阪に開設しました。" * 8


@dataclass
class Harness:
    fetcher: WebFetcher
    requested: Any  # () -> list[str]: the URLs the site was asked for (robots.txt aside)
    add: Any  # (path, FakePage) -> None
    pages: dict[str, FakePage] = field(default_factory=dict)

    def fetch(self, url: str, **validators: str) -> FetchResult:
        return fetch_waiting(self.fetcher, url, **validators)


def _responder(fake: FakePage) -> Any:
    headers = {k: v for k, v in (("ETag", fake.etag), ("Last-Modified", fake.last_modified)) if v}

    def respond(handler: Any) -> None:
        sent = handler.headers
        if fake.status == 200 and (
            (fake.etag and sent.get("If-None-Match") == fake.etag)
            or (fake.last_modified and sent.get("If-Modified-Since") == fake.last_modified)
        ):
            handler.send_response(304)
            handler.end_headers()
            return
        page(fake.body, fake.content_type, status=fake.status, headers=headers)(handler)

    return respond


@pytest.fixture(params=["fake", "real"])
def harness(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    disallowed = ("/private",)
    if request.param == "fake":
        fake = FakeWebFetcher(disallowed=[SITE + p for p in disallowed])
        yield Harness(
            fake,
            lambda: list(fake.requested),
            lambda path, p: fake.pages.__setitem__(SITE + path, p),
        )
        return
    only_loopback(monkeypatch)
    testdb: PgDB = request.getfixturevalue("testdb")
    web = LittleWeb()
    robots = "User-agent: *\n" + "".join(f"Disallow: {p}\n" for p in disallowed)
    web.routes["*", "/robots.txt"] = page(robots.encode(), "text/plain")
    guard = AddressGuard(local=web.local("acme.example"))
    real = PoliteWebFetcher(
        testdb.app(), SafeFetcher(user_agent("https://colony.example/r"), guard=guard), gap=0.05
    )
    try:
        yield Harness(
            real,
            lambda: [SITE + p for p in web.record.paths() if p != "/robots.txt"],
            lambda path, p: web.routes.__setitem__(("*", path), _responder(p)),
        )
    finally:
        web.close()


def test_it_is_a_web_fetcher(harness: Harness) -> None:
    """Its one method: a page fetched whole, as the one request the site saw."""
    harness.add("/", FakePage(b"<h1>Acme</h1>"))
    with exercised(WebFetcher, harness.fetcher) as fetcher:
        result = fetch_waiting(fetcher, SITE + "/")
    assert (result.outcome, result.status, result.ok, result.text) == (
        "ok",
        200,
        True,
        "<h1>Acme</h1>",
    )
    assert harness.requested() == [SITE + "/"]


def test_a_page_is_read_with_its_text_type_and_validators(harness: Harness) -> None:
    harness.add(
        "/about",
        FakePage(b"<h1>Acme</h1>", etag='"a1"', last_modified="Tue, 01 Dec 2026 10:00:00 GMT"),
    )
    result = harness.fetch(SITE + "/about")
    assert (result.outcome, result.status, result.ok) == ("ok", 200, True)
    assert (result.text, result.content_type, result.charset) == (
        "<h1>Acme</h1>",
        "text/html",
        "utf-8",
    )
    assert (result.etag, result.last_modified) == ('"a1"', "Tue, 01 Dec 2026 10:00:00 GMT")
    assert result.final_url == SITE + "/about" and result.redirects == ()


def test_a_refetch_with_validators_is_not_modified(harness: Harness) -> None:
    harness.add(
        "/news",
        FakePage(b"<p>news</p>", etag='"n1"', last_modified="Tue, 01 Dec 2026 10:00:00 GMT"),
    )
    first = harness.fetch(SITE + "/news")
    again = harness.fetch(SITE + "/news", etag=first.etag or "")
    assert (again.outcome, again.status, again.ok, again.content) == (
        "not_modified",
        304,
        True,
        b"",
    )
    by_date = harness.fetch(SITE + "/news", last_modified=first.last_modified or "")
    assert by_date.outcome == "not_modified"


def test_errors_types_and_text(harness: Harness) -> None:
    harness.add("/gone", FakePage(b"no", status=410))
    harness.add("/logo", FakePage(b"\x89PNG", content_type="image/png"))
    harness.add("/report", FakePage(b"%PDF-1.7", content_type="application/pdf"))
    harness.add("/jp", FakePage(f"<p>{JAPANESE}</p>".encode("shift_jis"), content_type="text/html"))
    gone = harness.fetch(SITE + "/gone")
    assert (gone.outcome, gone.status, gone.ok) == ("http_error", 410, False)
    assert harness.fetch(SITE + "/missing").status == 404
    assert harness.fetch(SITE + "/logo").outcome == "bad_type"
    pdf = harness.fetch(SITE + "/report")
    assert (pdf.outcome, pdf.text, pdf.content) == ("ok", None, b"%PDF-1.7")
    assert JAPANESE in (harness.fetch(SITE + "/jp").text or "")


def test_refusals_send_nothing(harness: Harness) -> None:
    harness.add("/private/plans", FakePage(b"<p>secret</p>"))
    cases = {
        SITE + "/private/plans": "robots_disallowed",
        "http://169.254.169.254/computeMetadata/v1/": "refused_address",
        "http://metadata.google.internal/": "refused_address",
        "http://[::ffff:10.0.0.1]/": "refused_address",
        "ftp://acme.example/": "refused_scheme_or_port",
        "http://acme.example:8443/": "refused_scheme_or_port",
    }
    for url, outcome in cases.items():
        result = harness.fetch(url)
        assert (result.outcome, result.ok) == (outcome, False), url
    assert harness.requested() == []
