"""Feeds and sitemaps (``colony.research.feeds``, ``sitemaps``, ``reader``): RSS 2.0, Atom,
RDF and JSON Feed into dated items, a sitemap and a sitemap index, and XML that is hostile
(entity bombs) or broken."""

from __future__ import annotations

import json
import time
from datetime import date, timedelta

import pytest

from colony.research import MAX_ITEMS, Document, read
from colony.research.feeds import read_feed
from colony.research.sitemaps import read_sitemap

TODAY = date(2026, 12, 3)
SITE = "https://acme.example"
BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<{root}><{child}>&lol9;</{child}></{root}>"""


def read_xml(url: str, text: str, content_type: str = "application/xml") -> Document:
    return read(url, content_type, text.encode(), text, today=TODAY)


@pytest.fixture(autouse=True, scope="module")
def _feedparser_loaded() -> None:
    """The reader loads feedparser with the first feed it reads (issue 32 item 4): one is
    read before the tests, so the timed ones time reading, not importing the parser."""
    read_feed(f"{SITE}/first.xml", "<rss><channel><title>t</title></channel></rss>", TODAY)


def test_atom_entries_keep_the_publishers_day() -> None:
    atom = f"""<?xml version="1.0" encoding="ISO-8859-1"?>
    <feed xmlns="http://www.w3.org/2005/Atom">
    <title type="html">Acme &lt;b&gt;news&lt;/b&gt;</title>
    <updated>2026-11-03T10:00:00Z</updated>
    <entry><title>Late opening</title><link href="/news/late"/>
      <published>2026-11-02T23:30:00-08:00</published><summary type="html">&lt;p&gt;Café&lt;/p&gt;
      &lt;p&gt;opens&lt;/p&gt;</summary></entry>
    <entry><title>Scheduled</title><link href="{SITE}/news/later"/>
      <published>2027-01-01T00:00:00Z</published></entry>
    </feed>"""
    feed = read_xml(f"{SITE}/atom.xml", atom, "application/atom+xml")
    assert feed.kind == "feed" and feed.problem is None and feed.title == "Acme <b>news</b>"
    assert (feed.published_at, feed.date_source) == (date(2026, 11, 3), "feed")
    late, scheduled = feed.items
    assert late.url == f"{SITE}/news/late" and late.published_at == date(2026, 11, 2)
    assert late.text == "Café opens"  # the declared ISO-8859-1 no longer applies to text
    assert scheduled.published_at is None  # a date from the future is no date


def test_rdf_items_read_with_their_dc_dates() -> None:
    rdf = """<?xml version="1.0"?>
    <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
      xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
    <channel rdf:about="https://acme.example/"><title>Acme RDF</title></channel>
    <item rdf:about="https://acme.example/a"><title>First</title><link>https://acme.example/a</link>
      <dc:date>2026-10-01</dc:date></item>
    </rdf:RDF>"""
    feed = read_xml(f"{SITE}/index.rdf", rdf, "application/rdf+xml")
    assert feed.kind == "feed" and feed.title == "Acme RDF"
    assert [(i.url, i.published_at) for i in feed.items] == [(f"{SITE}/a", date(2026, 10, 1))]


def test_a_feed_served_as_html_is_still_a_feed_and_items_are_capped_newest_first() -> None:
    days = [date(2026, 1, 1) + timedelta(days=(n * 37) % 150) for n in range(150)]  # shuffled
    items = "".join(
        f"<item><title>Item {day}</title><link>{SITE}/n/{day}</link>"
        f"<pubDate>{day:%a, %d %b %Y} 09:00:00 GMT</pubDate></item>"
        for day in days
    )
    rss = f'<rss version="2.0"><channel><title>Many</title>{items}</channel></rss>'
    feed = read_xml(f"{SITE}/feed", rss, "text/html")
    assert feed.kind == "feed" and len(feed.items) == MAX_ITEMS
    assert [item.published_at for item in feed.items] == sorted(days, reverse=True)[:MAX_ITEMS]


def test_a_json_feed() -> None:
    body = {
        "version": "https://jsonfeed.org/version/1.1",
        "title": "Acme JSON",
        "items": [
            {
                "id": "1",
                "url": "/j/1",
                "title": "One",
                "content_html": "<p>Hello <b>there</b></p>",
                "date_published": "2026-11-10T08:00:00+01:00",
            },
            {"id": "2", "content_text": "No title, no url"},
            "not an item",
        ],
    }
    text = json.dumps(body)
    feed = read(f"{SITE}/feed.json", "application/feed+json", text.encode(), text, today=TODAY)
    assert feed.kind == "feed" and feed.title == "Acme JSON" and feed.problem is None
    assert [(i.url, i.title, i.text, i.published_at) for i in feed.items] == [
        (f"{SITE}/j/1", "One", "Hello there", date(2026, 11, 10))
    ]


def test_a_sitemap_index_lists_its_sitemaps_on_the_same_site() -> None:
    index = f"""<?xml version="1.0" encoding="UTF-8"?>
    <sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>{SITE}/sitemap-pages.xml</loc><lastmod>2026-11-01</lastmod></sitemap>
      <sitemap><loc>https://www.acme.example/sitemap-news.xml</loc></sitemap>
      <sitemap><loc>https://elsewhere.example/sitemap.xml</loc></sitemap>
    </sitemapindex>"""
    sitemap = read_xml(f"{SITE}/sitemap_index.xml", index)
    assert sitemap.kind == "sitemap" and sitemap.items == () and sitemap.problem is None
    assert [(link.url, link.kind) for link in sitemap.links] == [
        (f"{SITE}/sitemap-pages.xml", "sitemap"),
        ("https://www.acme.example/sitemap-news.xml", "sitemap"),
    ]


def test_a_malformed_sitemap_is_a_problem_not_a_guess() -> None:
    broken = f"<urlset><url><loc>{SITE}/a</loc></url><url><loc>{SITE}/b"
    assert read_xml(f"{SITE}/sitemap.xml", broken).problem == "malformed_sitemap"


@pytest.mark.parametrize(
    ("root", "child", "kind"),
    [("rss", "channel", "feed"), ("feed", "title", "feed"), ("urlset", "url", "sitemap")],
)
def test_an_xml_bomb_is_refused_at_once(root: str, child: str, kind: str) -> None:
    started = time.monotonic()
    refused = read_xml(f"{SITE}/x.xml", BILLION_LAUGHS.format(root=root, child=child))
    assert time.monotonic() - started < 1.0
    assert (refused.kind, refused.problem, refused.items) == (kind, "unsafe_xml", ())


def test_behind_the_precheck_each_parser_refuses_a_bomb_on_its_own() -> None:
    # The readers, reached without the reader's pre-check: defusedxml refuses the entities;
    # feedparser drops every entity whose value refers to another, and expands nothing.
    started = time.monotonic()
    sitemap = read_sitemap(
        f"{SITE}/s.xml", BILLION_LAUGHS.format(root="urlset", child="url"), TODAY
    )
    feed = read_feed(f"{SITE}/f.xml", BILLION_LAUGHS.format(root="rss", child="channel"), TODAY)
    assert time.monotonic() - started < 1.0
    assert sitemap.problem == "unsafe_xml" and feed.problem == "malformed_feed"
    assert feed.title is None and feed.items == ()


def test_a_prolog_too_long_to_check_is_not_read_as_a_feed_or_sitemap() -> None:
    padded = BILLION_LAUGHS.format(root="urlset", child="url").replace(
        "<!DOCTYPE", "<!--" + " " * 70_000 + "-->\n<!DOCTYPE", 1
    )
    assert read_xml(f"{SITE}/sitemap.xml", padded).problem == "unknown_xml"


def test_an_entity_behind_a_fake_end_of_the_doctype_is_still_seen() -> None:
    tricky = BILLION_LAUGHS.format(root="rss", child="channel").replace(
        "<!ENTITY lol ", '<!ATTLIST lolz a CDATA "]>">\n <!ENTITY lol ', 1
    )
    assert read_xml(f"{SITE}/feed.xml", tricky).problem == "unsafe_xml"


@pytest.mark.parametrize(
    ("opener", "kind", "problem"),
    [
        ("<!--", "page", "unknown_xml"),  # never closed: no root element to be seen
        ("<?", "page", "unknown_xml"),
        ("<![CDATA[", "page", "unknown_xml"),
        ("<!DOCTYPE x [", "page", "unknown_xml"),
        ("<!DOCTYPE", "feed", "malformed_feed"),  # closed by the rss element's ">"
        ("<", "feed", "malformed_feed"),
    ],
)
def test_a_hostile_prolog_is_read_in_one_pass(opener: str, kind: str, problem: str) -> None:
    head = opener * (60_000 // len(opener))
    started = time.monotonic()
    found = read_xml(f"{SITE}/feed.xml", head + "<rss><channel><title>t</title></channel></rss>")
    assert time.monotonic() - started < 1.0
    assert (found.kind, found.problem) == (kind, problem)


def test_xml_that_is_neither_feed_nor_sitemap() -> None:
    other = read_xml(f"{SITE}/data.xml", "<catalog><book>One</book></catalog>")
    assert (other.kind, other.problem) == ("page", "unknown_xml")
