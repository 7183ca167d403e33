"""The safe fetch (``colony.adapters.web`` and ``web_body``) against a real HTTP server on
127.0.0.1: the byte cap, the deadline, content types, charsets and conditional requests (the
address rules: ``tests/test_web_guard.py``)."""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from colony.env_values import ResearchWeb
from colony.testing.loopback import closed_port
from tests.little_web import (
    HOSTS,
    LittleWeb,
    dripping_headers,
    endless,
    fenced,
    page,
    safe_fetcher,
)


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[LittleWeb]:
    yield from fenced(monkeypatch)


# --- caps, deadline, types ------------------------------------------------------------------


def test_a_huge_page_is_cut_at_the_cap_without_being_read_whole(web: LittleWeb) -> None:
    web.routes["*", "/big"] = endless(b"<p>" + b"x" * 65_530 + b"</p>", web=web)
    result = safe_fetcher(web.local(*HOSTS), max_bytes=1_000_000).get("http://acme.example/big")
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
    fetch = safe_fetcher(web.local(*HOSTS), max_bytes=100_000)
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
    result = safe_fetcher(web.local(*HOSTS), deadline=1.0, read_timeout=0.6).get(
        "http://acme.example/slow"
    )
    assert result.outcome == "timeout", result
    assert time.monotonic() - started < 1.8


def test_a_port_with_nothing_listening_is_unreachable(web: LittleWeb) -> None:
    local = ResearchWeb("127.0.0.1", closed_port(), frozenset({"gone.example"}))
    assert safe_fetcher(local).get("http://gone.example/").outcome == "unreachable"


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
    result = safe_fetcher(web.local(*HOSTS)).get("http://acme.example/doc")
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
    result = safe_fetcher(web.local(*HOSTS)).get("http://acme.example/")
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
    result = safe_fetcher(web.local(*HOSTS)).get("http://acme.example/")
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
    fetch = safe_fetcher(web.local(*HOSTS))
    first = fetch.get("http://acme.example/news")
    assert (first.outcome, first.etag) == ("ok", '"v1"')
    assert first.last_modified == "Tue, 01 Dec 2026 10:00:00 GMT"
    again = fetch.get(
        "http://acme.example/news", etag=first.etag, last_modified=first.last_modified
    )
    assert (again.outcome, again.status, again.content, again.ok) == (
        "not_modified",
        304,
        b"",
        True,
    )
    assert again.etag == '"v1"' and again.last_modified == first.last_modified
    by_date = fetch.get("http://acme.example/news", last_modified=first.last_modified)
    assert by_date.outcome == "not_modified"
    sent = web.record.arrivals
    assert "If-None-Match" not in sent[0].headers
    assert sent[1].headers["If-None-Match"] == '"v1"'
    assert sent[2].headers["If-Modified-Since"] == first.last_modified
    assert "If-None-Match" not in sent[2].headers
