"""URLs as the reader keeps them (``colony.research.urls``): normalised, told apart by site,
classified, and a public job board's page mapped to its JSON API with the link's scheme."""

from __future__ import annotations

import pytest

from colony.research import board_api, normalise, same_site, site
from colony.research.urls import kind_of


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("/about#team", "https://acme.example/about"),
        ("HTTPS://Acme.Example:443/a/./b/../c", "https://acme.example/a/c"),
        ("http://acme.example:80", "http://acme.example/"),
        ("http://acme.example:8080/x", "http://acme.example:8080/x"),
        ("news?utm_source=x&page=2&fbclid=y", "https://acme.example/news?page=2"),
        ("/a b/ü", "https://acme.example/a%20b/%C3%BC"),
        ("/already%20escaped", "https://acme.example/already%20escaped"),
        ("//cdn.example/file.pdf", "https://cdn.example/file.pdf"),
        ("http://[2001:db8::1]/x", "http://[2001:db8::1]/x"),
    ],
)
def test_normalise(href: str, expected: str) -> None:
    assert normalise(href, "https://acme.example/index.html") == expected


@pytest.mark.parametrize(
    "href",
    [
        "mailto:info@acme.example",
        "tel:+15550100",
        "javascript:void(0)",
        "#top",
        "",
        "ftp://acme.example/file",
        "https://user:secret@acme.example/",
        "http://acme.example:99999/",
        "https://acme.example/" + "x" * 2_100,
    ],
)
def test_what_is_not_a_url_to_follow(href: str) -> None:
    assert normalise(href, "https://acme.example/") is None


def test_a_site_folds_www() -> None:
    assert site("https://www.Acme.example/x") == "acme.example" == site("acme.example")
    assert same_site("http://www.acme.example/a", "https://acme.example/b")
    assert not same_site("https://blog.acme.example/", "https://acme.example/")


@pytest.mark.parametrize(
    ("url", "api"),
    [
        # production: the public boards, https
        (
            "https://boards.greenhouse.io/acme",
            "https://boards-api.greenhouse.io/v1/boards/acme/jobs?content=true",
        ),
        (
            "https://job-boards.greenhouse.io/acme/jobs/4012345",
            "https://boards-api.greenhouse.io/v1/boards/acme/jobs?content=true",
        ),
        (
            "https://boards.greenhouse.io/embed/job_board?for=acme&b=https%3A%2F%2Facme.example",
            "https://boards-api.greenhouse.io/v1/boards/acme/jobs?content=true",
        ),
        (
            "https://boards.greenhouse.io/embed/job_board/js?for=acme",
            "https://boards-api.greenhouse.io/v1/boards/acme/jobs?content=true",
        ),
        ("https://jobs.lever.co/acme", "https://api.lever.co/v0/postings/acme?mode=json"),
        (
            "https://jobs.lever.co/acme/8b5f6e1a-0000/apply",
            "https://api.lever.co/v0/postings/acme?mode=json",
        ),
        ("https://jobs.eu.lever.co/acme", "https://api.eu.lever.co/v0/postings/acme?mode=json"),
        (
            "https://jobs.ashbyhq.com/Acme.Health",
            "https://api.ashbyhq.com/posting-api/job-board/Acme.Health",
        ),
        # the stand-in web: plain http links, and its API hosts answer on http
        (
            "http://boards.greenhouse.io/mercyridge",
            "http://boards-api.greenhouse.io/v1/boards/mercyridge/jobs?content=true",
        ),
        ("http://jobs.lever.co/mercyridge", "http://api.lever.co/v0/postings/mercyridge?mode=json"),
        (
            "http://jobs.ashbyhq.com/mercyridge",
            "http://api.ashbyhq.com/posting-api/job-board/mercyridge",
        ),
    ],
)
def test_a_job_board_maps_to_its_public_api_keeping_the_scheme(url: str, api: str) -> None:
    assert board_api(url) == api


@pytest.mark.parametrize(
    "url",
    [
        "https://boards.greenhouse.io/",
        "https://boards.greenhouse.io/embed/job_board",  # no ?for=
        "https://boards.greenhouse.io/embed",
        "https://jobs.lever.co/",
        "https://jobs.lever.co/%3Cscript%3E",
        "https://lever.co/acme",
        "https://jobs.ashbyhq.com.evil.example/acme",
        "https://acme.example/careers",
        "https://api.lever.co/v0/postings/acme",  # already the API: not a board page
    ],
)
def test_what_is_not_a_board(url: str) -> None:
    assert board_api(url) is None


@pytest.mark.parametrize(
    ("url", "text", "kind"),
    [
        ("https://a.example/about-us", "", "about"),
        ("https://a.example/about/leadership", "About", "leadership"),
        ("https://a.example/company/our-team.html", "", "leadership"),
        ("https://a.example/find-a-location", "", "locations"),
        ("https://a.example/news/2026/opening-day", "", "news"),
        ("https://a.example/press-releases/q3", "", "press"),
        ("https://a.example/newsroom", "", "press"),
        ("https://a.example/careers/nurses", "", "careers"),
        ("https://a.example/news/feed.xml", "", "feed"),
        ("https://a.example/feed/", "", "feed"),
        ("https://a.example/sitemap_index.xml", "", "sitemap"),
        ("https://a.example/files/Annual%20Report.PDF", "", "pdf"),
        ("https://a.example/p/123", "Our Team", "leadership"),
        ("https://a.example/p/124", "Join us", "careers"),
        # a headline naming a section is still a headline
        ("https://a.example/p/125", "Acme announces a leadership change", "page"),
        ("https://a.example/news/new-leadership-team-named", "", "news"),
    ],
)
def test_kinds(url: str, text: str, kind: str) -> None:
    assert kind_of(url, text) == kind
