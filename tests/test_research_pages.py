"""HTML pages (``colony.research.pages``, ``links``): text hidden from people, pages that need
a browser and pages that are merely short, where a date comes from (and when there is none),
which links are kept, how they rank, and the limits."""

from __future__ import annotations

import time
from datetime import date

import pytest
from lxml.html import fromstring

from colony.research import MAX_LINKS, MAX_TEXT, Document, read
from colony.research.pages import MAX_ELEMENTS, bound

TODAY = date(2026, 12, 3)
URL = "https://acme.example/about"
PROSE = (
    "Acme Health runs eleven clinics across the Columbus area and opened its newest one in "
    "Delaware this autumn, with evening hours and a pharmacy on site."
)


def page(body: str, head: str = "", url: str = URL) -> Document:
    html = (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Acme</title>{head}</head>'
        f"<body>{body}</body></html>"
    )
    return read(url, "text/html", html.encode(), html, today=TODAY)


def article(middle: str) -> str:
    return f"<main><article><h1>About</h1><p>{PROSE}</p>{middle}<p>{PROSE}</p></article></main>"


@pytest.mark.parametrize(
    "hidden",
    [
        "<p hidden>SECRET one.</p>",
        '<div hidden="hidden"><p>SECRET two.</p></div>',
        '<p aria-hidden="true">SECRET three.</p>',
        '<p style="DISPLAY : None !important">SECRET four.</p>',
        '<p style="color:red; visibility:hidden">SECRET five.</p>',
        "<template><p>SECRET six.</p></template>",
        '<p>Visible words <span style="display:none">SECRET seven</span> stay.</p>',
    ],
)
def test_text_hidden_from_people_is_dropped(hidden: str) -> None:
    found = page(article(hidden))
    assert "SECRET" not in found.text and PROSE in found.text
    if "stay" in hidden:
        assert "Visible words stay." in found.text  # the text around it is kept


@pytest.mark.parametrize(
    "shown",
    [
        '<p hidden="until-found">SHOWN by find-in-page.</p>',
        '<p style="opacity:0">SHOWN after a fade-in.</p>',
        '<p class="hidden">SHOWN: stylesheets are not evaluated.</p>',
    ],
)
def test_text_people_can_see_is_kept(shown: str) -> None:
    assert "SHOWN" in page(article(shown)).text


def test_an_empty_app_shell_needs_a_browser() -> None:
    shell = page(
        '<header><nav><a href="/">Home</a> <a href="/about">About</a></nav></header>'
        '<div id="app"></div><script src="/static/app.js"></script>'
    )
    assert shell.needs_browser and shell.text == "" and shell.problem is None
    assert [link.kind for link in shell.links] == ["page"]  # its links are still offered


def test_a_page_that_asks_for_javascript_needs_a_browser_whatever_its_nav_says() -> None:
    nav = "<nav>" + "".join(f'<a href="/s/{n}">Section {n}</a> ' for n in range(20)) + "</nav>"
    shell = '<div id="root"></div><script>boot()</script>'
    asking = page(nav + shell + "<noscript>Please enable JavaScript to continue.</noscript>")
    assert asking.needs_browser and asking.text == "" and asking.problem is None
    silent = page(nav + shell)  # 40 words of navigation: more than an empty shell shows
    assert (silent.needs_browser, silent.problem) == (False, "no_text")


@pytest.mark.parametrize(
    "body",
    [
        "<h1>Contact</h1><p>Call us on 555 0100.</p><script>track()</script>",
        "<p>Thanks.</p><script src='/a.js'></script>",
    ],
)
def test_a_short_page_with_scripts_is_not_flagged(body: str) -> None:
    short = page(body)
    assert not short.needs_browser and short.text and short.problem is None


def test_a_page_with_nothing_to_read_and_no_scripts_is_no_text() -> None:
    empty = page('<img src="/banner.png" alt="">')
    assert (empty.text, empty.needs_browser, empty.problem) == ("", False, "no_text")


def dated(document: Document) -> tuple[date | None, str | None]:
    return document.published_at, document.date_source


def test_dates_in_order_of_trust() -> None:
    meta = '<meta property="article:published_time" content="2026-10-01T08:00:00-04:00">'
    timed = article('<time datetime="2026-09-15">15 Sep</time>')
    assert dated(page(timed, meta)) == (date(2026, 10, 1), "article:published_time")
    assert dated(page(timed)) == (date(2026, 9, 15), "time")
    in_url = page(article(""), url="https://acme.example/2026/08/20/opening")
    assert dated(in_url) == (date(2026, 8, 20), "url")
    ld = '{"@type": "NewsArticle", "datePublished": "2026-07-04"}'
    linked_data = page(article(""), f'<script type="application/ld+json">{ld}</script>')
    assert dated(linked_data) == (date(2026, 7, 4), "htmldate")


def test_no_date_from_the_future_and_none_from_a_footer_year() -> None:
    future = '<meta property="article:published_time" content="2031-01-01">'
    found = page(article('<time datetime="2026-09-15">15 Sep</time>'), future)
    assert dated(found) == (date(2026, 9, 15), "time")
    footer = page(article("") + "<footer>© 2026 Acme Health</footer>")
    assert footer.published_at is None


def test_a_listing_of_dates_is_not_dated_by_them() -> None:
    listing = "".join(
        f'<li><time datetime="2026-{m:02d}-01">{m}</time> <a href="/news/{m}">Item {m}</a></li>'
        for m in (3, 6, 9)
    )
    found = page(f"<main><h1>News</h1><p>{PROSE}</p><ul>{listing}</ul></main>")
    assert dated(found) == (None, None)


def test_links_kept_dropped_and_ranked() -> None:
    body = (
        '<base href="https://acme.example/en/">'
        '<a href="leadership">Leadership</a>'
        '<a href="https://www.acme.example/en/careers#open">Careers</a>'
        '<a href="/en/careers?utm_source=nav">Careers again</a>'
        '<a href="/en/news?page=2">News, page 2</a><a href="/en/news">News</a>'
        '<a href="mailto:hi@acme.example">Mail</a><a href="tel:5550100">Call</a>'
        '<a href="javascript:open()">Open</a><a href="#top">Top</a>'
        '<a href="/img/logo.png">Logo</a><a href="/brochure.docx">Brochure</a>'
        '<a href="https://partner.example/about">Partner</a>'
        '<a href="https://cdn.example/report.pdf">Annual report</a>'
        '<a href="https://feeds.example/acme.rss">RSS</a>'
        '<iframe src="https://boards.greenhouse.io/embed/job_board?for=acme"></iframe>'
        '<a href="https://acme.example/en/contact"><img src="/c.png" alt="Contact us"></a>'
        f"<p>{PROSE}</p>"
    )
    head = (
        '<link rel="alternate" type="application/atom+xml" title="Acme news" href="/atom.xml">'
        '<link rel="alternate" type="text/html" hreflang="fr" href="/fr/">'
        '<meta http-equiv="refresh" content="30; url=/en/welcome">'
    )
    found = page(body, head)
    assert [(link.kind, link.url, link.text) for link in found.links] == [
        (
            "job_board",
            "https://boards-api.greenhouse.io/v1/boards/acme/jobs?content=true",
            "",
        ),
        ("feed", "https://acme.example/atom.xml", "Acme news"),
        ("feed", "https://feeds.example/acme.rss", "RSS"),
        ("leadership", "https://acme.example/en/leadership", "Leadership"),
        ("news", "https://acme.example/en/news", "News"),  # the page, not its page 2
        ("careers", "https://www.acme.example/en/careers", "Careers"),
        ("pdf", "https://cdn.example/report.pdf", "Annual report"),
        ("page", "https://acme.example/en/welcome", ""),
        ("page", "https://acme.example/en/contact", "Contact us"),
    ]


def test_a_link_farm_keeps_its_nav_and_stops_at_the_cap() -> None:
    farm = "".join(f'<a href="/p/{n}">Page {n}</a>' for n in range(5_000))
    found = page(f'<nav><a href="/team">Team</a></nav><p>{PROSE}</p>{farm}')
    assert len(found.links) == MAX_LINKS
    assert found.links[0].kind == "leadership" and found.links[-1].url.endswith("/p/198")


def test_a_huge_page_is_cut_before_extraction() -> None:
    farm = "".join(f'<p><a href="/p/{n}">Page {n}</a></p>' for n in range(60_000))
    tree = fromstring(f"<html><body>{farm}</body></html>")
    assert bound(tree) and sum(1 for _ in tree.iter()) == MAX_ELEMENTS
    assert not bound(fromstring(f"<html><body><p>{PROSE}</p></body></html>"))
    # CPU time of this thread, not the wall clock: a loaded machine stretches the latter
    started = time.thread_time()
    found = page(farm)
    assert time.thread_time() - started < 4  # about 1 s here; uncut, trafilatura takes minutes
    assert found.text.startswith("Page 0\nPage 1\n") and len(found.links) == MAX_LINKS


def test_text_is_capped() -> None:
    huge = "".join(f"<p>{PROSE} Paragraph {n}.</p>" for n in range(3_000))
    found = page(f"<main><article>{huge}</article></main>")
    assert len(found.text) == MAX_TEXT and found.text.startswith("Acme Health runs")


def test_the_title_falls_back_to_og_title_then_the_heading() -> None:
    html = '<html><head><meta property="og:title" content="Acme | About"></head>'
    html += "<body><h1>About</h1></body></html>"
    assert read(URL, "text/html", html.encode(), html, today=TODAY).title == "Acme | About"
    html = f"<html><body><h1>About  Acme</h1><p>{PROSE}</p></body></html>"
    assert read(URL, "text/html", html.encode(), html, today=TODAY).title == "About Acme"


def test_what_is_not_html_at_all() -> None:
    assert read(URL, "image/png", b"\x89PNG", None).problem == "unsupported_type"
    assert read(URL, "text/html", b"", "").problem == "no_text"
