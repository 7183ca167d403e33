"""A company's generated website: what a good researcher should find, and where.

``company(...)`` takes the facts a test plants (news, jobs, leaders, locations, an about text,
the job board) and fills what it leaves out, deterministically from the seed and the domain;
``company_sites`` renders the site:

==================  ==========================================================================
path                what
==================  ==========================================================================
/                   navigation (about, leadership, locations, news, careers), latest news
/about              the about text
/leadership         names and titles
/locations          the offices
/news               every news item: a dated link each (visible date and ``<time datetime>``)
/news/{slug}        one article: ``article:published_time``, ``<time datetime>``, the body
/news/feed.xml      RSS 2.0, declared by ``<link rel="alternate" type="application/rss+xml">``
/press/{slug}.pdf   the press release as a PDF (its text extractable), linked from its article
/careers            a link to the public job board (Greenhouse, Lever or Ashby)
/sitemap.xml        every page above with ``<lastmod>``
/robots.txt         ``*`` may not fetch /admin or /search; names the sitemap
==================  ==========================================================================

``www.{domain}`` answers every path with a 301 to the bare domain.
"""

from __future__ import annotations

import functools
import html
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from email.utils import format_datetime
from typing import TypedDict, Unpack
from xml.sax.saxutils import escape

from colony.testing.web import pdf
from colony.testing.web.boards import KINDS, Board, Job, Kind, board_url
from colony.testing.web.pages import SCHEME, Page, Robots, Site, on, redirect

_FIRST = ("Avery", "Jordan", "Morgan", "Elena", "Marcus", "Priya", "Daniel", "Hannah", "Samuel")
_LAST = ("Castillo", "Hartman", "Okafor", "Lindgren", "Abernathy", "Moreau", "Takahashi", "Reyes")
_CITIES = ("Columbus, OH", "Denver, CO", "Raleigh, NC", "Tucson, AZ", "Madison, WI", "Boise, ID")
_ROLES = ("Facilities Coordinator", "Financial Analyst", "IT Support Specialist", "HR Generalist")
_OLD_NEWS = (
    "{name} recognised for its community partnerships",
    "{name} publishes its annual community report",
    "{name} welcomes two new board members",
)
NewsFact = tuple[str, str] | tuple[str, str, str]  # (ISO date, title[, body])
JobFact = tuple[str, str] | tuple[str, str, str]  # (title, ISO date[, location])


@dataclass(frozen=True, slots=True)
class News:
    day: date
    title: str
    body: str
    slug: str


@dataclass(frozen=True, slots=True)
class Company:
    domain: str
    name: str
    about: str
    news: tuple[News, ...]  # newest first
    board: Board
    leaders: tuple[tuple[str, str], ...]
    locations: tuple[str, ...]
    press: News  # the item also published as a PDF


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "item"


class Facts(TypedDict, total=False):
    """What a test can plant in a company's site (each optional)."""

    news: Iterable[NewsFact]  # e.g. ("2026-11-02", "Mercy Ridge opens two new clinics", body)
    jobs: Iterable[JobFact]  # e.g. ("Revenue Cycle Manager", "2026-11-20")
    leaders: Iterable[tuple[str, str]]  # (name, title)
    locations: Iterable[str]
    about: str
    job_board: Kind


def company(domain: str, name: str, *, seed: int = 0, **facts: Unpack[Facts]) -> Company:
    """The planted facts, plus older filler news, a filler job and, where none are given,
    generated leaders, locations and about text (all from ``seed`` and ``domain``)."""
    rng = random.Random(f"{seed}:{domain}")
    where = tuple(facts.get("locations", ())) or tuple(rng.sample(_CITIES, 3))
    news = facts.get("news", ())
    planted = [(date.fromisoformat(f[0]), f[1], f[2] if len(f) > 2 else "") for f in news]
    older = [
        (date(2026, 3, 2) + timedelta(days=rng.randrange(90)), title.format(name=name), "")
        for title in rng.sample(_OLD_NEWS, 2)
    ]
    items: list[News] = []
    for day, title, body in sorted(planted + older, key=lambda item: item[0], reverse=True):
        slug = _slug(title)
        while any(item.slug == slug for item in items):
            slug += "-2"
        text = body or f"{name} announced: {title}."
        items.append(News(day, title, text, slug))
    jobs = facts.get("jobs", ())
    posted = [Job(f[0], date.fromisoformat(f[1]), *(f[2:] or (where[0],))) for f in jobs]
    filler = Job(rng.choice(_ROLES), date(2026, 9, 1) + timedelta(days=rng.randrange(60)), where[0])
    people = tuple(facts.get("leaders", ())) or tuple(
        (f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", title)
        for title in (
            "Chief Executive Officer",
            "Chief Financial Officer",
            "Chief Operating Officer",
        )
    )
    token = re.sub(r"[^a-z0-9]", "", domain.split(".")[0]) or "company"
    drawn = rng.choice(KINDS)
    board = Board(facts.get("job_board", drawn), token, name, (*posted, filler))
    about_text = facts.get("about") or (
        f"{name} is headquartered in {where[0]} and serves its communities from "
        f"{len(where)} locations."
    )
    return Company(domain, name, about_text, tuple(items), board, people, where, items[0])


def _long(day: date) -> str:
    return f"{day:%B} {day.day}, {day.year}"


def _time(day: date) -> str:
    return f'<time datetime="{day.isoformat()}">{_long(day)}</time>'


def _layout(c: Company, title: str, main: str, head: str = "") -> bytes:
    nav = " ".join(
        f'<a href="{href}">{label}</a>'
        for href, label in (
            ("/", "Home"),
            ("/about", "About"),
            ("/leadership", "Leadership"),
            ("/locations", "Locations"),
            ("/news", "News"),
            ("/careers", "Careers"),
        )
    )
    name = html.escape(c.name)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} | {name}</title>"
        f'<link rel="alternate" type="application/rss+xml" title="{name} news" '
        f'href="/news/feed.xml">{head}</head><body><header><a class="brand" href="/">{name}</a>'
        f"<nav>{nav}</nav></header><main>{main}</main><footer>&copy; 2026 {name} &middot; "
        f'<a href="/sitemap.xml">Sitemap</a></footer></body></html>'
    ).encode()


def _paragraphs(text: str) -> list[str]:
    return [part.strip() for part in text.split("\n\n") if part.strip()]


def _article(c: Company, item: News) -> bytes:
    stamp = on(item.day).isoformat()
    head = (
        f'<meta property="og:type" content="article">'
        f'<meta property="article:published_time" content="{stamp}">'
    )
    body = "".join(f"<p>{html.escape(p)}</p>" for p in _paragraphs(item.body))
    if item is c.press:
        body += f'<p><a href="/press/{item.slug}.pdf">Download the press release (PDF)</a></p>'
    main = (
        f'<article><h1>{html.escape(item.title)}</h1><p class="date">{_time(item.day)}</p>'
        f"{body}</article>"
    )
    return _layout(c, item.title, main, head)


def _listing(items: Sequence[News]) -> str:
    return "".join(
        f'<li>{_time(i.day)} <a href="/news/{i.slug}">{html.escape(i.title)}</a></li>'
        for i in items
    )


def _feed(c: Company) -> bytes:
    base = f"{SCHEME}://{c.domain}"
    items = "".join(
        f"<item><title>{escape(i.title)}</title><link>{base}/news/{i.slug}</link>"
        f'<guid isPermaLink="true">{base}/news/{i.slug}</guid>'
        f"<pubDate>{format_datetime(on(i.day))}</pubDate>"
        f"<description>{escape(_paragraphs(i.body)[0])}</description></item>"
        for i in c.news
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
        f"<title>{escape(c.name)} news</title><link>{base}/news</link>"
        f"<description>News from {escape(c.name)}</description>"
        f"<lastBuildDate>{format_datetime(on(c.news[0].day))}</lastBuildDate>{items}"
        f"</channel></rss>"
    ).encode()


def _sitemap(c: Company, pages: dict[str, Page]) -> bytes:
    urls = "".join(
        f"<url><loc>{SCHEME}://{c.domain}{path}</loc>"
        f"<lastmod>{page.last_modified.date().isoformat()}</lastmod></url>"
        for path, page in pages.items()
        if path != "/news/feed.xml"
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    ).encode()


def company_pages(c: Company) -> dict[str, Page]:
    latest = on(c.news[0].day)
    about = "".join(f"<p>{html.escape(p)}</p>" for p in _paragraphs(c.about))
    main = (
        f"<h1>{html.escape(c.name)}</h1><p>{html.escape(_paragraphs(c.about)[0])}</p>"
        f"<h2>Latest news</h2>"
        f"<ul>{_listing(c.news[:3])}</ul>"
        f'<p><a href="/careers">Careers at {html.escape(c.name)}</a></p>'
    )
    leaders = "".join(
        f'<li class="leader"><h3>{html.escape(n)}</h3><p>{html.escape(t)}</p></li>'
        for n, t in c.leaders
    )
    places = "".join(f"<li>{html.escape(place)}</li>" for place in c.locations)
    press = f'<p><a href="/press/{c.press.slug}.pdf">Press release: {html.escape(c.press.title)}'
    careers = (
        f"<h1>Careers</h1><p>Join {html.escape(c.name)}. Every open role is on our job board.</p>"
        f'<p><a href="{board_url(c.board.kind, c.board.token)}">See open positions</a></p>'
    )
    lines = [f"FOR IMMEDIATE RELEASE - {_long(c.press.day)}", *_paragraphs(c.press.body)]
    pages = {
        "/": Page(_layout(c, "Home", main), modified=latest),
        "/about": Page(_layout(c, "About", f"<h1>About us</h1>{about}")),
        "/leadership": Page(_layout(c, "Leadership", f"<h1>Leadership</h1><ul>{leaders}</ul>")),
        "/locations": Page(_layout(c, "Locations", f"<h1>Our locations</h1><ul>{places}</ul>")),
        "/news": Page(
            _layout(c, "News", f"<h1>News</h1><ul>{_listing(c.news)}</ul>{press} (PDF)</a></p>"),
            modified=latest,
        ),
        "/careers": Page(_layout(c, "Careers", careers)),
        "/news/feed.xml": Page(_feed(c), "application/rss+xml; charset=utf-8", modified=latest),
        f"/press/{c.press.slug}.pdf": Page(
            pdf.press_release(c.press.title, lines), "application/pdf", modified=on(c.press.day)
        ),
    }
    for item in c.news:
        pages[f"/news/{item.slug}"] = Page(_article(c, item), modified=on(item.day))
    pages["/sitemap.xml"] = Page(_sitemap(c, pages), "application/xml", modified=latest)
    return pages


def company_sites(c: Company) -> list[Site]:
    """The company's site and its ``www.`` host, which redirects to it."""
    robots = Robots({"*": ("/admin", "/search")}, f"{SCHEME}://{c.domain}/sitemap.xml")
    site = Site(c.domain, company_pages(c), robots, generated=True)
    www = Site(f"www.{c.domain}", dynamic=functools.partial(_to_bare, c.domain))
    return [site, www]


def _to_bare(domain: str, target: str) -> Page:
    return redirect(f"{SCHEME}://{domain}{target}", 301)
