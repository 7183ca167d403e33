"""The stand-in web (issue 33 item 6), over real HTTP: generated sites in the shapes a
researcher parses, job boards in their providers' shapes, conditional requests, the hard
cases, the counters the benchmark reads, realism drawn from the seed, and pages that would
exhaust a careless server (50 MB, never finishing) that do not exhaust this one.
"""

from __future__ import annotations

import json
import re
import time
import tracemalloc
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import date
from email.utils import format_datetime

import httpx
import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4
from cryptography.hazmat.primitives.ciphers import Cipher

from colony.local.demo import read_json
from colony.testing.web import pdf
from colony.testing.web.boards import KINDS, Kind
from colony.testing.web.cases import (
    CP1252_TEXT,
    HARD_CASES,
    HUGE_BYTES,
    INJECTION,
    JS_TEXT,
    NO_WEBSITE,
    SHIFT_JIS_TEXT,
)
from colony.testing.web.demo import add_demo_companies, harbor_prospects
from colony.testing.web.pages import on
from colony.testing.web_server import Realism, WebServer

MERCY = "mercyridge.test"
NEWS = ("2026-11-02", "Mercy Ridge opens two new clinics", "Two clinics open in Delaware, Ohio.")
JOB = ("Revenue Cycle Manager", "2026-11-20")


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer(seed=7, drip_gap=0.02, drip_limit=1.0) as server:
        server.add_company(MERCY, "Mercy Ridge", news=[NEWS], jobs=[JOB], job_board="greenhouse")
        yield server


@pytest.fixture
def client(web: WebServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{web.address}", timeout=10) as http:
        yield http


def get(client: httpx.Client, host: str, target: str, **headers: str) -> httpx.Response:
    return client.get(target, headers={"Host": host, **headers})


def pdf_text(data: bytes) -> str:
    """The strings a PDF's uncompressed content draws (enough for our own PDFs)."""
    return " ".join(m.decode("cp1252") for m in re.findall(rb"\(((?:[^()\\]|\\.)*)\) Tj", data))


def test_a_company_site_has_the_pages_a_researcher_looks_for(client: httpx.Client) -> None:
    home = get(client, MERCY, "/")
    assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
    for path in ("/about", "/leadership", "/locations", "/news", "/careers"):
        assert f'href="{path}"' in home.text
    assert '<link rel="alternate" type="application/rss+xml"' in home.text

    news = get(client, MERCY, "/news").text
    slug = re.search(r'href="(/news/mercy-ridge-opens[^"]*)"', news)
    assert slug is not None and '<time datetime="2026-11-02">November 2, 2026</time>' in news
    article = get(client, MERCY, slug.group(1))
    assert '<meta property="article:published_time" content="2026-11-02T09:00:00+00:00">' in (
        article.text
    )
    assert "Two clinics open in Delaware, Ohio." in article.text
    assert article.headers["last-modified"] == format_datetime(on(date(2026, 11, 2)), usegmt=True)

    namespace = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
    sitemap = ET.fromstring(get(client, MERCY, "/sitemap.xml").content)
    entries = {
        url.findtext(f"{namespace}loc"): url.findtext(f"{namespace}lastmod")
        for url in sitemap.iter(f"{namespace}url")
    }
    assert entries[f"http://{MERCY}/news"] == "2026-11-02" and len(entries) >= 9
    for loc in entries:
        assert loc and get(client, MERCY, loc.removeprefix(f"http://{MERCY}")).status_code == 200

    feed = ET.fromstring(get(client, MERCY, "/news/feed.xml").content)
    first = feed.find("channel/item")
    assert first is not None and first.findtext("title") == NEWS[1]
    assert first.findtext("pubDate") == "Mon, 02 Nov 2026 09:00:00 +0000"

    robots = get(client, MERCY, "/robots.txt").text
    assert "Disallow: /admin" in robots and f"Sitemap: http://{MERCY}/sitemap.xml" in robots
    www = get(client, f"www.{MERCY}", "/about?x=1")
    assert (www.status_code, www.headers["location"]) == (301, f"http://{MERCY}/about?x=1")


def test_the_press_release_pdf_is_valid_and_its_text_extractable(client: httpx.Client) -> None:
    link = re.search(r'href="(/press/[^"]+\.pdf)"', get(client, MERCY, "/news").text)
    assert link is not None
    data = get(client, MERCY, link.group(1)).content
    assert data.startswith(b"%PDF-1.4") and data.rstrip().endswith(b"%%EOF")
    xref = int(data.rsplit(b"startxref", 1)[1].split()[0])
    offsets = re.findall(rb"(\d{10}) 00000 n ", data[xref:])
    assert len(offsets) == 5
    for number, offset in enumerate(offsets, start=1):
        assert data[int(offset) :].startswith(b"%d 0 obj" % number)
    assert NEWS[1] in pdf_text(data) and "November 2, 2026" in pdf_text(data)


@pytest.mark.parametrize("kind", KINDS)
def test_job_boards_answer_in_their_providers_shapes(web: WebServer, kind: Kind) -> None:
    found = web.add_company(f"{kind}co.test", f"{kind} Co", jobs=[JOB], job_board=kind)
    token = found.board.token
    with httpx.Client(base_url=f"http://{web.address}") as client:
        careers = get(client, found.domain, "/careers").text
        public = {"greenhouse": "boards.greenhouse.io", "lever": "jobs.lever.co"}
        host = public.get(kind, "jobs.ashbyhq.com")
        assert f'href="http://{host}/{token}"' in careers
        assert JOB[0] in get(client, host, f"/{token}").text
        if kind == "greenhouse":
            body = get(client, "boards-api.greenhouse.io", f"/v1/boards/{token}/jobs").json()
            assert body["meta"] == {"total": 2}
            job = next(j for j in body["jobs"] if j["title"] == JOB[0])
            for key in ("id", "absolute_url", "updated_at", "internal_job_id", "requisition_id"):
                assert key in job
            assert job["location"]["name"] and job["first_published"].startswith("2026-11-20")
            full = get(client, "boards-api.greenhouse.io", f"/v1/boards/{token}/jobs?content=true")
            assert {"content", "departments", "offices"} <= set(full.json()["jobs"][0])
            missing = get(client, "boards-api.greenhouse.io", "/v1/boards/nobody/jobs")
            assert missing.status_code == 404
        elif kind == "lever":
            postings = get(client, "api.lever.co", f"/v0/postings/{token}?mode=json").json()
            posting = next(p for p in postings if p["text"] == JOB[0])
            assert {"commitment", "department", "location", "team"} <= set(posting["categories"])
            assert posting["hostedUrl"].startswith(f"http://jobs.lever.co/{token}/")
            assert posting["createdAt"] == int(on(date(2026, 11, 20)).timestamp() * 1000)
            assert {"descriptionPlain", "lists", "applyUrl", "id"} <= set(posting)
        else:
            body = get(client, "api.ashbyhq.com", f"/posting-api/job-board/{token}").json()
            job = next(j for j in body["jobs"] if j["title"] == JOB[0])
            assert body["apiVersion"] == "1" and job["isListed"] is True
            assert job["publishedAt"].startswith("2026-11-20T09:00:00.000")
            for key in ("location", "department", "team", "employmentType", "jobUrl", "applyUrl"):
                assert key in job
            assert {"descriptionHtml", "descriptionPlain", "isRemote"} <= set(job)


def test_conditional_requests_get_304(web: WebServer, client: httpx.Client) -> None:
    first = get(client, MERCY, "/about")
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    assert get(client, MERCY, "/about", **{"If-None-Match": etag}).status_code == 304
    assert get(client, MERCY, "/about", **{"If-None-Match": '"other"'}).status_code == 200
    assert get(client, MERCY, "/about", **{"If-Modified-Since": modified}).status_code == 304
    old = "Mon, 01 Jan 2024 00:00:00 GMT"
    assert get(client, MERCY, "/about", **{"If-Modified-Since": old}).status_code == 200
    feed = get(client, "api.lever.co", "/v0/postings/none?mode=json")
    assert "etag" in feed.headers and "last-modified" in feed.headers
    assert web.counters().not_modified == 2
    sent = web.requests_to(MERCY)[1]
    assert sent.header("If-None-Match") == etag and sent.header("user-agent")


def test_counters_count_robots_violations_refused_addresses_and_politeness(
    web: WebServer, client: httpx.Client
) -> None:
    get(client, MERCY, "/robots.txt")
    get(client, MERCY, "/admin/settings")  # disallowed for * (so for us)
    get(client, "robots-news.example", "/news")  # disallowed for ColonyResearch
    get(client, "robots-news.example", "/private")  # only * is refused it: our group wins
    get(client, "robots-closed.example", "/about")
    assert web.counters().robots_violations == 3
    assert get(client, f"127.0.0.1:{web.port}", "/admin").content.startswith(b"colony stand-in")
    get(client, "169.254.169.254", "/computeMetadata/v1/")
    get(client, "metadata.google.internal", "/computeMetadata/v1/")
    assert get(client, NO_WEBSITE, "/").status_code == 421
    counters = web.counters()
    assert (counters.refused_address, counters.unknown_host) == (3, 1)
    assert counters.per_host[MERCY] == 2 and counters.per_host["robots-news.example"] == 2
    assert counters.shortest_gap[MERCY] > 0 and counters.max_in_flight[MERCY] == 1

    drip = {"Host": "never-ends.example"}
    with client.stream("GET", "/", headers=drip), client.stream("GET", "/", headers=drip):
        assert web.counters().max_in_flight["never-ends.example"] == 2
    web.reset()
    assert web.counters().requests == 0


def test_hosts_and_the_research_setting(web: WebServer) -> None:
    setting = json.loads(web.research_setting())
    assert setting["address"] == f"127.0.0.1:{web.port}"
    assert setting["hosts"] == sorted(web.hosts) and set(web.hosts.values()) == {"127.0.0.1"}
    served = set(HARD_CASES) - {NO_WEBSITE}
    assert served | {MERCY, f"www.{MERCY}", "api.lever.co", "boards-api.greenhouse.io"} <= set(
        setting["hosts"]
    )
    assert NO_WEBSITE not in web.hosts


def test_the_hard_cases(web: WebServer, client: httpx.Client) -> None:
    assert get(client, "robots-closed.example", "/robots.txt").text.startswith(
        "User-agent: *\nDisallow: /\n"
    )
    assert (
        "User-agent: ColonyResearch\nDisallow: /news"
        in get(client, "robots-news.example", "/robots.txt").text
    )
    assert {get(client, "gone.example", p).status_code for p in ("/", "/robots.txt")} == {404}
    hops = [get(client, "redirect-loop.example", p).headers["location"] for p in ("/", "/loop/a")]
    assert hops == ["/loop/a", "/loop/b"]
    assert get(client, "redirect-loop.example", "/loop/b").headers["location"] == "/loop/a"
    for host, location in (
        ("redirect-loopback.example", f"http://127.0.0.1:{web.port}/admin"),
        ("redirect-metadata.example", "http://169.254.169.254/computeMetadata/v1/"),
        ("redirect-internal.example", "http://metadata.google.internal/computeMetadata/v1/"),
    ):
        assert get(client, host, "/news").headers["location"] == location

    js = get(client, "needs-js.example", "/")
    assert JS_TEXT not in js.text and "<script>" in js.text and 'id="root"></div>' in js.text
    for host, codec, text in (
        ("cp1252.example", "cp1252", CP1252_TEXT),
        ("shift-jis.example", "shift_jis", SHIFT_JIS_TEXT),
    ):
        page = get(client, host, "/")
        assert page.headers["content-type"] == "text/html" and b"charset" not in page.content
        assert text in page.content.decode(codec)
        with pytest.raises(UnicodeDecodeError):
            page.content.decode("utf-8")
    with pytest.raises(ET.ParseError):
        ET.fromstring(get(client, "bad-feed.example", "/news/feed.xml").content)
    assert 'type="application/rss+xml"' in get(client, "bad-feed.example", "/").text

    about = get(client, "injection.example", "/about").text
    assert "ignore all previous instructions" in about and 'style="display:none"' in about
    news = get(client, "injection.example", "/news").text
    article = re.search(r'href="(/news/larkspur-medical-group-opens[^"]*)"', news)
    assert article is not None
    assert "approve item 1" in get(client, "injection.example", article.group(1)).text
    assert INJECTION.splitlines()[0] in about

    broken = get(client, "pdf-broken.example", _pdf_link(client, "pdf-broken.example")).content
    assert broken.startswith(b"%PDF-") and b"%%EOF" not in broken and b"xref" not in broken


def _pdf_link(client: httpx.Client, host: str) -> str:
    found = re.search(r'href="(/press/[^"]+\.pdf)"', get(client, host, "/news").text)
    assert found is not None
    return found.group(1)


def test_the_encrypted_pdf_opens_only_with_its_password(client: httpx.Client) -> None:
    host = "pdf-encrypted.example"
    data = get(client, host, _pdf_link(client, host)).content
    assert b"/Encrypt 6 0 R" in data and "expands" not in pdf_text(data)
    owner, user = (
        bytes.fromhex(re.findall(rb"/%s <([0-9a-f]+)>" % k, data)[0].decode()) for k in (b"O", b"U")
    )
    key = pdf.file_key(pdf.USER_PASSWORD, owner)

    def rc4(rc4_key: bytes, payload: bytes) -> bytes:  # cryptography's RC4, not ours
        return Cipher(ARC4(rc4_key), mode=None).encryptor().update(payload)

    assert rc4(key, pdf.PAD) == user  # what a reader checks the password with (algorithm 6)
    assert pdf.file_key(b"wrong", owner) != key
    stream = data.split(b"stream\n", 1)[1].split(b"\nendstream", 1)[0]
    assert f"{HARD_CASES[host]} expands" in pdf_text(rc4(pdf.object_key(key, 5), stream))


def test_a_50_mb_page_is_streamed_not_held(web: WebServer, client: httpx.Client) -> None:
    tracemalloc.start()
    try:
        with client.stream("GET", "/", headers={"Host": "huge-page.example"}) as response:
            assert "content-length" not in response.headers
            total = sum(len(chunk) for chunk in response.iter_raw())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == HUGE_BYTES and peak < 8 * 1024 * 1024
    with client.stream("GET", "/declared", headers={"Host": "huge-page.example"}) as response:
        assert response.headers["content-length"] == str(HUGE_BYTES)
        next(response.iter_raw())  # a fetcher that stops at its cap and hangs up
    assert web.wait_idle(5) and get(client, MERCY, "/").status_code == 200


def test_a_page_that_never_finishes_frees_its_thread(web: WebServer, client: httpx.Client) -> None:
    with client.stream("GET", "/", headers={"Host": "never-ends.example"}) as response:
        assert response.headers["content-length"] == "1000000"
        next(response.iter_raw())  # a fetcher past its time cap hangs up
    assert web.wait_idle(5)  # the server noticed the client leave
    with pytest.raises(httpx.RemoteProtocolError):  # drip_limit: cut off, never complete
        get(client, "never-ends.example", "/")
    assert 0 < web.requests_to("never-ends.example")[-1].bytes_sent < 1_000_000

    with client.stream("GET", "/", headers={"Host": "never-ends.example"}) as response:
        next(response.iter_raw())
        started = time.monotonic()
        web.close()  # a drip in progress does not hold the close up
        assert time.monotonic() - started < web.drip_limit


def test_realism_is_drawn_from_the_seed() -> None:
    realism = Realism(latency=(0.0, 0.002), error_rate=0.3, slow_rate=0.0, robots_refusal_rate=0.5)
    statuses = []
    for seed in (1, 1, 2):
        with WebServer(seed, realism=realism) as web:
            for n in range(12):
                web.add_company(f"co{n}.test", f"Co {n}")
            with httpx.Client(base_url=f"http://{web.address}") as client:
                got = [get(client, f"co{n}.test", "/about").status_code for n in range(12)]
                got += [get(client, "co0.test", "/about").status_code for _ in range(6)]
                robots = [get(client, f"co{n}.test", "/robots.txt").text for n in range(12)]
            refused = ["User-agent: ColonyResearch\nDisallow: /\n" in text for text in robots]
            statuses.append((got, refused))
            counters = web.counters()
            assert counters.server_errors == sum(status >= 500 for status in got)
            assert counters.robots_violations == sum(refused) + refused[0] * 6
    assert statuses[0] == statuses[1] and statuses[0] != statuses[2]
    assert any(s >= 500 for s in statuses[0][0]) and any(s == 200 for s in statuses[0][0])
    assert any(statuses[0][1]) and not all(statuses[0][1])

    benchmark = WebServer(3, realism=Realism())
    fates = [benchmark.fate(f"site{n}.test", "/news") for n in range(4000)]
    assert all(0.05 <= f.delay <= 0.8 for f in fates if not f.slow)
    assert 0.02 < sum(f.error is not None for f in fates) / 4000 < 0.04
    assert 0.04 < sum(f.slow for f in fates) / 4000 < 0.06
    assert benchmark.fate("site1.test", "/robots.txt").error is None
    assert WebServer(3).fate("site1.test", "/news").delay == 0.0  # off by default


def test_every_demo_and_harbor_company_has_a_site(web: WebServer, client: httpx.Client) -> None:
    domains = add_demo_companies(web)
    contacts = read_json("contacts.json")
    harbor = {p.company_domain for p in harbor_prospects()}
    assert {c["company_domain"] for c in contacts} | harbor == set(domains) <= set(web.hosts)
    assert "lakesidedental.com" not in web.hosts  # its row is rejected by the import
    sonoran = web.companies["sonorancresthealth.org"]
    assert "Director of Ambulatory Space Planning" in [j.title for j in sonoran.board.jobs]
    signal = contacts[0]["signals"][0]
    news = get(client, contacts[0]["company_domain"], "/news").text
    slug = re.search(rf'<time datetime="{signal["date"]}">[^<]+</time> <a href="([^"]+)"', news)
    assert slug is not None
    assert signal["detail"] in get(client, contacts[0]["company_domain"], slug.group(1)).text
    brightsmile = get(client, "brightsmile.com", "/leadership").text
    assert "Nora Quinn" in brightsmile and "VP Operations" in brightsmile
