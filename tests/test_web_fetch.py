"""The safe fetch (``colony.adapters.web`` and its guard, wire and body modules) against a real
HTTP server on 127.0.0.1: every SSRF refusal, the pin against DNS rebinding, redirects, the
byte cap, the deadline, content types, charsets and conditional requests.

No request leaves this machine: ``only_loopback`` refuses any connection but to 127.0.0.1
(and records each attempt, so a test can say none was made)."""

from __future__ import annotations

import gzip
import ssl
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from colony.adapters.web import Limits, SafeFetcher, user_agent
from colony.adapters.web_guard import AddressGuard, Resolver, refusal
from colony.env_values import ResearchWeb
from colony.testing.certs import self_signed
from tests.little_web import (
    LittleWeb,
    closed_port,
    dripping_headers,
    endless,
    only_loopback,
    page,
    redirect,
)

AGENT = user_agent("https://colony.example/research")
HOSTS = ("acme.example", "www.acme.example", "other.example")


@pytest.fixture
def web() -> Iterator[LittleWeb]:
    server = LittleWeb()
    yield server
    server.close()


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    return only_loopback(monkeypatch)


def fetcher(
    local: ResearchWeb | None, resolver: Resolver | None = None, **limits: float
) -> SafeFetcher:
    guard = (
        AddressGuard(local=local)
        if resolver is None
        else AddressGuard(local=local, resolver=resolver)
    )
    return SafeFetcher(AGENT, guard=guard, limits=Limits(**limits))  # type: ignore[arg-type]


class Answers:
    """A resolver that answers from a script, counting the questions."""

    def __init__(self, *answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        return self.answers[min(len(self.asked), len(self.answers)) - 1]


# --- the guard ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.1.2.3/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://172.31.255.255/",
        "http://192.168.1.1/",
        "http://169.254.169.254/computeMetadata/v1/",
        "http://169.254.1.1/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",  # carrier-grade NAT
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://[::1]/",
        "http://[::]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[ff02::1]/",
        "http://[64:ff9b::a00:1]/",  # NAT64 of 10.0.0.1
        "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://metadata/",
        "http://localhost/",
        "http://api.localhost/",
        "http://2130706433/",  # 127.0.0.1 as one number: a single label, never resolved
        "https://10.0.0.1/",
    ],
)
def test_private_loopback_link_local_and_metadata_addresses_are_refused_unconnected(
    url: str, web: LittleWeb, connections: list[tuple[str, int]]
) -> None:
    resolver = Answers(["93.184.216.34"])
    result = fetcher(web.local(*HOSTS), resolver).get(url)
    assert result.outcome == "refused_address", result
    assert connections == [] and web.record.arrivals == []
    assert resolver.asked == []  # literals and forbidden names are never looked up


def test_the_stand_ins_own_address_is_refused_while_it_listens(
    web: LittleWeb, connections: list[tuple[str, int]]
) -> None:
    result = fetcher(web.local(*HOSTS)).get(f"http://127.0.0.1:{web.port}/")
    assert result.outcome == "refused_address"
    assert connections == [] and web.record.arrivals == []


@pytest.mark.parametrize(
    ("url", "outcome"),
    [
        ("ftp://acme.example/", "refused_scheme_or_port"),
        ("file:///etc/passwd", "refused_scheme_or_port"),
        ("gopher://acme.example:70/", "refused_scheme_or_port"),
        ("http://acme.example:8080/", "refused_scheme_or_port"),
        ("http://public.example:22/", "refused_scheme_or_port"),
        ("http://user:secret@acme.example/", "bad_url"),
        ("http://exa mple.com/", "bad_url"),
    ],
)
def test_only_http_and_https_on_80_and_443(
    url: str, outcome: str, web: LittleWeb, connections: list[tuple[str, int]]
) -> None:
    result = fetcher(web.local(*HOSTS), Answers(["93.184.216.34"])).get(url)
    assert result.outcome == outcome, result
    assert connections == []


@pytest.mark.parametrize(
    "answers",
    [["10.0.0.1"], ["93.184.216.34", "127.0.0.1"], ["::1"], ["::ffff:192.168.0.9"], []],
)
def test_a_name_resolving_to_any_private_address_is_refused_before_connecting(
    answers: list[str], connections: list[tuple[str, int]]
) -> None:
    resolver = Answers(answers)
    result = fetcher(None, resolver).get("http://intranet.example/")
    assert result.outcome == ("unreachable" if not answers else "refused_address")
    assert resolver.asked == ["intranet.example"]
    assert connections == []


def test_the_connection_goes_to_the_checked_address_and_the_name_is_never_resolved_again(
    connections: list[tuple[str, int]],
) -> None:
    # DNS rebinding: a public answer to the check, loopback to any later question
    resolver = Answers(["93.184.216.34"], ["127.0.0.1"])
    result = fetcher(None, resolver).get("http://rebind.example/")
    assert resolver.asked == ["rebind.example"]  # one question, and its answer was used
    assert connections == [("93.184.216.34", 80)]  # refused by the test's fence, not sent
    assert result.outcome == "unreachable"


def test_refusal_reasons_name_what_the_address_is() -> None:
    from ipaddress import ip_address

    assert refusal(ip_address("169.254.169.254")) == "the metadata server"
    assert refusal(ip_address("::ffff:127.0.0.1")) == "loopback (inside ::ffff:7f00:1)"
    assert refusal(ip_address("93.184.216.34")) is None
    assert refusal(ip_address("2606:4700::1111")) is None


# --- redirects ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:{port}/secret",
        "http://169.254.169.254/computeMetadata/v1/",
        "http://metadata.google.internal/",
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://intranet.example/",
        "ftp://acme.example/",
    ],
)
def test_every_redirect_hop_is_checked_again(
    location: str, web: LittleWeb, connections: list[tuple[str, int]]
) -> None:
    web.routes["*", "/"] = redirect(location.format(port=web.port))
    resolver = Answers(["10.0.0.1"])
    result = fetcher(web.local(*HOSTS), resolver).get("http://acme.example/")
    assert result.outcome in ("refused_address", "refused_scheme_or_port"), result
    assert web.record.paths() == ["/"]  # the hop was never requested
    assert connections == [("127.0.0.1", web.port)]
    assert result.redirects == (result.final_url,)


def test_redirects_are_followed_up_to_five_hops_each_pinned(web: LittleWeb) -> None:
    for n in range(5):
        web.routes["*", f"/{n}"] = redirect(f"http://www.acme.example/{n + 1}", 301)
    web.routes["*", "/5"] = page(b"<p>arrived</p>")
    web.routes["*", "/loop-a"] = redirect("/loop-b")
    web.routes["*", "/loop-b"] = redirect("http://acme.example/loop-a")
    web.routes["*", "/long"] = redirect("/0")
    web.routes["*", "/nowhere"] = page(b"", None, status=302)
    fetch = fetcher(web.local(*HOSTS))
    done = fetch.get("http://acme.example/0")
    assert done.outcome == "ok" and done.text == "<p>arrived</p>"
    assert done.final_url == "http://www.acme.example/5" and len(done.redirects) == 5
    assert [a.host for a in web.record.arrivals][-1] == "www.acme.example"
    assert fetch.get("http://acme.example/loop-a").outcome == "redirect_loop"
    assert fetch.get("http://acme.example/long").outcome == "too_many_redirects"
    assert fetch.get("http://acme.example/nowhere").outcome == "http_error"


def test_a_hook_may_stop_a_redirect_before_it_is_requested(web: LittleWeb) -> None:
    web.routes["*", "/"] = redirect("http://other.example/")
    seen: list[str] = []

    def stop(url: str) -> tuple[str, str]:
        seen.append(url)
        return "redirected", "another site"

    result = fetcher(web.local(*HOSTS)).get("http://acme.example/", before_hop=stop)  # type: ignore[arg-type]
    assert (result.outcome, result.final_url) == ("redirected", "http://other.example/")
    assert seen == ["http://other.example/"] and web.record.paths() == ["/"]


# --- TLS: pinned to an address, verified for the name -------------------------------------


def test_https_is_pinned_to_the_address_and_verified_for_the_hostname(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path, "secure", dns_names=("secure.example",))
    server = LittleWeb(tls=(cert, key))
    try:
        server.routes["*", "/"] = page(b"<p>secret handshake</p>")
        context = ssl.create_default_context(cafile=str(cert))
        guard = AddressGuard(local=server.local("secure.example", "wrong.example"))
        fetch = SafeFetcher(AGENT, guard=guard, ssl_context=context)
        good = fetch.get(f"https://secure.example:{server.port}/")
        assert good.outcome == "ok" and good.text == "<p>secret handshake</p>"
        arrival = server.record.arrivals[0]
        assert arrival.sni == "secure.example"
        assert arrival.headers["Host"] == f"secure.example:{server.port}"
        # the same address under a name the certificate does not carry: refused by TLS
        bad = fetch.get(f"https://wrong.example:{server.port}/")
        assert bad.outcome == "unreachable" and "certificate" in bad.detail.lower()
        assert len(server.record.arrivals) == 1
    finally:
        server.close()


# --- caps, deadline, types ------------------------------------------------------------------


def test_a_huge_page_is_cut_at_the_cap_without_being_read_whole(web: LittleWeb) -> None:
    web.routes["*", "/big"] = endless(b"<p>" + b"x" * 65_530 + b"</p>", web=web)
    result = fetcher(web.local(*HOSTS), max_bytes=1_000_000).get("http://acme.example/big")
    assert result.outcome == "too_large" and len(result.content) == 1_000_000
    assert result.text is not None and result.text.startswith("<p>xxx")
    time.sleep(0.2)  # not synchronisation: lets the server's last write fail before reading
    assert web.record.bytes_sent < 20_000_000  # far from the 6.5 GB it would have sent


def test_a_declared_length_over_the_cap_is_not_read_and_a_gzip_bomb_is_cut(
    web: LittleWeb,
) -> None:
    web.routes["*", "/declared"] = page(b"y" * 300_000)
    bomb = gzip.compress(b"\0" * 30_000_000)
    web.routes["*", "/bomb"] = page(bomb, headers={"Content-Encoding": "gzip"})
    web.routes["*", "/small-gzip"] = page(
        gzip.compress(b"<p>squeezed</p>"), headers={"Content-Encoding": "gzip"}
    )
    web.routes["*", "/brotli"] = page(b"??", headers={"Content-Encoding": "br"})
    fetch = fetcher(web.local(*HOSTS), max_bytes=100_000)
    declared = fetch.get("http://acme.example/declared")
    assert declared.outcome == "too_large" and declared.content == b""
    bombed = fetch.get("http://acme.example/bomb")
    assert bombed.outcome == "too_large" and len(bombed.content) == 100_000
    assert fetch.get("http://acme.example/small-gzip").text == "<p>squeezed</p>"
    assert fetch.get("http://acme.example/brotli").outcome == "bad_type"


@pytest.mark.parametrize("responder", ["drip-body", "drip-headers", "silent"])
def test_a_page_that_never_finishes_is_abandoned_at_the_deadline(
    responder: str, web: LittleWeb
) -> None:
    web.routes["*", "/slow"] = {
        "drip-body": endless(b"<p>.</p>", every=0.1),
        "drip-headers": dripping_headers(0.1),
        "silent": page(b"late", delay=5.0),
    }[responder]
    started = time.monotonic()
    result = fetcher(web.local(*HOSTS), deadline=1.0, read_timeout=0.6).get(
        "http://acme.example/slow"
    )
    assert result.outcome == "timeout", result
    assert time.monotonic() - started < 1.8


def test_a_port_with_nothing_listening_is_unreachable(web: LittleWeb) -> None:
    local = ResearchWeb("127.0.0.1", closed_port(), frozenset({"gone.example"}))
    assert fetcher(local).get("http://gone.example/").outcome == "unreachable"


@pytest.mark.parametrize(
    ("content_type", "outcome"),
    [
        ("text/html; charset=utf-8", "ok"),
        ("application/xhtml+xml", "ok"),
        ("application/rss+xml", "ok"),
        ("application/atom+xml; charset=UTF-8", "ok"),
        ("application/xml", "ok"),
        ("text/xml", "ok"),
        ("application/json", "ok"),
        ("application/pdf", "ok"),
        ("image/png", "bad_type"),
        ("text/plain", "bad_type"),
        ("application/octet-stream", "bad_type"),
        (None, "bad_type"),
    ],
)
def test_only_pages_feeds_json_and_pdf_are_read(
    content_type: str | None, outcome: str, web: LittleWeb
) -> None:
    web.routes["*", "/doc"] = page(b"%PDF-1.7 or <p>text</p>", content_type)
    result = fetcher(web.local(*HOSTS)).get("http://acme.example/doc")
    assert result.outcome == outcome
    if outcome == "bad_type":
        assert result.content == b""
        assert str(content_type) in result.detail
    elif content_type == "application/pdf":
        assert result.text is None and result.content.startswith(b"%PDF")
    else:
        assert result.text == "%PDF-1.7 or <p>text</p>"


@pytest.mark.parametrize("status", [400, 403, 404, 410, 429, 500, 503])
def test_error_statuses_are_http_errors_with_their_status(status: int, web: LittleWeb) -> None:
    web.routes["*", "/"] = page(b"no", status=status)
    result = fetcher(web.local(*HOSTS)).get("http://acme.example/")
    assert (result.outcome, result.status, result.content) == ("http_error", status, b"")


# --- text ------------------------------------------------------------------------------------

FRENCH = "Café « naïve » – the façade’s “smart quotes” cost €12, déjà vu. " * 20
JAPANESE = "株式会社アクメは東京に本社を置き、新しい物流センターを大阪に開設しました。" * 10


@pytest.mark.parametrize(
    ("body", "content_type", "expected", "codec"),
    [
        (f"<html><p>{FRENCH}</p></html>".encode("cp1252"), "text/html", FRENCH, "cp1252"),
        (
            f"<html><p>{JAPANESE}</p></html>".encode("shift_jis"),
            "text/html",
            JAPANESE,
            None,
        ),
        (
            f'<html><head><meta charset="shift_jis"></head><p>{JAPANESE}</p>'.encode("shift_jis"),
            "text/html",
            JAPANESE,
            "shift_jis",
        ),
        (
            f'<?xml version="1.0" encoding="windows-1252"?><rss>{FRENCH}</rss>'.encode("cp1252"),
            "application/rss+xml",
            FRENCH,
            "cp1252",
        ),
        (FRENCH.encode("cp1252"), "text/html; charset=ISO-8859-1", FRENCH, "cp1252"),
        (JAPANESE.encode("euc_jp"), "text/html; charset=EUC-JP", JAPANESE, "euc_jp"),
        (f"<p>{JAPANESE}</p>".encode(), "text/html", JAPANESE, "utf-8"),
        ('{"title": "Café"}'.encode(), "application/json", "Café", "utf-8"),
    ],
)
def test_text_is_decoded_from_the_header_the_document_or_detection(
    body: bytes, content_type: str, expected: str, codec: str | None, web: LittleWeb
) -> None:
    web.routes["*", "/"] = page(body, content_type)
    result = fetcher(web.local(*HOSTS)).get("http://acme.example/")
    assert result.outcome == "ok" and result.text is not None
    assert expected in result.text
    if codec is not None:
        assert result.charset == codec
    else:  # detected: any Shift-JIS family codec reads it
        assert result.charset in ("shift_jis", "cp932", "shift_jis_2004", "shift_jisx0213")


# --- conditional requests ---------------------------------------------------------------------


def _conditional(handler: BaseHTTPRequestHandler) -> None:
    validators = {"ETag": '"v1"', "Last-Modified": "Tue, 01 Dec 2026 10:00:00 GMT"}
    if handler.headers.get("If-None-Match") == '"v1"' or (
        handler.headers.get("If-Modified-Since") == validators["Last-Modified"]
    ):
        handler.send_response(304)
        handler.send_header("ETag", '"v1"')
        handler.end_headers()
        return
    page(b"<p>news</p>", headers=validators)(handler)


def test_validators_make_a_refetch_conditional_and_a_304_is_an_answer(web: LittleWeb) -> None:
    web.routes["*", "/news"] = _conditional
    fetch = fetcher(web.local(*HOSTS))
    first = fetch.get("http://acme.example/news")
    assert (first.outcome, first.etag) == ("ok", '"v1"')
    assert first.last_modified == "Tue, 01 Dec 2026 10:00:00 GMT"
    again = fetch.get(
        "http://acme.example/news", etag=first.etag, last_modified=first.last_modified
    )
    assert (again.outcome, again.status, again.content, again.ok) == (
        "not_modified", 304, b"", True,
    )  # fmt: skip
    assert again.etag == '"v1"' and again.last_modified == first.last_modified
    by_date = fetch.get("http://acme.example/news", last_modified=first.last_modified)
    assert by_date.outcome == "not_modified"
    sent = web.record.arrivals
    assert "If-None-Match" not in sent[0].headers
    assert sent[1].headers["If-None-Match"] == '"v1"'
    assert sent[2].headers["If-Modified-Since"] == first.last_modified
    assert "If-None-Match" not in sent[2].headers
