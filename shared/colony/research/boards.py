"""A public job board's JSON, read into postings: Greenhouse, Lever and Ashby, in the shapes
their public APIs document (and ``colony.testing.web.boards`` serves):

=============  ===========================================  ================================
provider       body                                         a posting's fields read
=============  ===========================================  ================================
Greenhouse     ``{"jobs": [...], "meta": {"total"}}``       ``title``, ``absolute_url``,
               (``/v1/boards/{token}/jobs?content=true``)   ``location.name``,
                                                            ``first_published`` else
                                                            ``updated_at``, ``content``
                                                            (entity-escaped HTML)
Lever          ``[...]`` (``/v0/postings/{co}?mode=json``)  ``text`` (the title),
                                                            ``hostedUrl``,
                                                            ``categories.location``,
                                                            ``createdAt`` (epoch ms),
                                                            ``descriptionPlain``
Ashby          ``{"apiVersion", "jobs": [...]}``            ``title``, ``jobUrl``,
               (``/posting-api/job-board/{org}``)           ``location``, ``publishedAt``,
                                                            ``descriptionPlain``; unlisted
                                                            (``isListed: false``) skipped
=============  ===========================================  ================================

A board is told by its shape, so an empty Lever board (``[]``) is only a board when it
came from Lever's API host. A posting without a title and URL is skipped; a field of the
wrong type reads as missing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from colony.research import dates
from colony.research.document import MAX_ITEM_TEXT, MAX_TITLE, Document, Item, listing, one_line
from colony.research.markup import html_text
from colony.research.urls import host, normalise

LEVER_HOSTS = frozenset({"api.lever.co", "api.eu.lever.co"})


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _greenhouse(job: dict[str, Any]) -> tuple[str, str, str, Any, str]:
    place = job.get("location")
    location = _text(place.get("name")) if isinstance(place, dict) else ""
    when = job.get("first_published") or job.get("updated_at")
    text = html_text(_text(job.get("content")), MAX_ITEM_TEXT, escaped=True)
    return _text(job.get("title")), _text(job.get("absolute_url")), location, when, text


def _lever(job: dict[str, Any]) -> tuple[str, str, str, Any, str]:
    categories = job.get("categories")
    location = _text(categories.get("location")) if isinstance(categories, dict) else ""
    text = _text(job.get("descriptionPlain")) or html_text(
        _text(job.get("description")), MAX_ITEM_TEXT
    )
    return _text(job.get("text")), _text(job.get("hostedUrl")), location, job.get("createdAt"), text


def _ashby(job: dict[str, Any]) -> tuple[str, str, str, Any, str]:
    text = _text(job.get("descriptionPlain")) or html_text(
        _text(job.get("descriptionHtml")), MAX_ITEM_TEXT
    )
    return (
        _text(job.get("title")),
        _text(job.get("jobUrl")),
        _text(job.get("location")),
        job.get("publishedAt"),
        text,
    )


Reader = Callable[[dict[str, Any]], tuple[str, str, str, Any, str]]


def _shape(url: str, body: object) -> tuple[Reader, list[Any]] | None:
    """Which provider's reader fits ``body``, and its postings."""
    if isinstance(body, list):
        looks_lever = any(isinstance(j, dict) and "hostedUrl" in j for j in body)
        return (_lever, body) if looks_lever or host(url) in LEVER_HOSTS else None
    if not isinstance(body, dict) or not isinstance(body.get("jobs"), list):
        return None
    jobs: list[Any] = body["jobs"]
    if "apiVersion" in body or any(isinstance(j, dict) and "jobUrl" in j for j in jobs):
        return _ashby, jobs
    if "meta" in body or any(isinstance(j, dict) and "absolute_url" in j for j in jobs):
        return _greenhouse, jobs
    return None


def read_board(url: str, body: object, today: date) -> Document | None:
    """The postings of the board whose API at ``url`` answered ``body`` (parsed JSON);
    None when ``body`` is no board we know."""
    shape = _shape(url, body)
    if shape is None:
        return None
    reader, jobs = shape
    found = []
    for job in jobs:
        if not isinstance(job, dict) or job.get("isListed") is False:
            continue
        title, link, location, when, text = reader(job)
        target = normalise(link, url) or ""
        if not (target or title.strip()):
            continue
        found.append(
            Item(
                target,
                one_line(title, MAX_TITLE),
                one_line(text, MAX_ITEM_TEXT),
                dates.published(dates.parse(when), today),
                one_line(location, MAX_TITLE) or None,
            )
        )
    return listing("job_board", url, found, "board")
