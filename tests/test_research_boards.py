"""Job boards' JSON (``colony.research.boards``) in the shapes the providers document for
their public APIs (Greenhouse's Job Board API, Lever's Postings API, Ashby's posting API),
and JSON the reader does not know or cannot parse."""

from __future__ import annotations

import json
from datetime import date

import pytest

from colony.research import Document, read

TODAY = date(2026, 12, 3)
GREENHOUSE = "https://boards-api.greenhouse.io/v1/boards/acme/jobs?content=true"
LEVER = "https://api.lever.co/v0/postings/acme?mode=json"
ASHBY = "https://api.ashbyhq.com/posting-api/job-board/acme"


def read_json(url: str, body: object, content_type: str = "application/json") -> Document:
    text = body if isinstance(body, str) else json.dumps(body)
    return read(url, content_type, text.encode(), text, today=TODAY)


def test_greenhouse() -> None:
    body = {
        "jobs": [
            {
                "id": 127817,
                "internal_job_id": 144381,
                "title": "Facilities Director",
                "updated_at": "2026-11-14T10:55:28-05:00",
                "requisition_id": "50",
                "location": {"name": "Columbus, OH"},
                "absolute_url": "https://boards.greenhouse.io/acme/jobs/127817",
                "metadata": None,
                "content": "Lead our &lt;b&gt;facilities&lt;/b&gt; team.&lt;p&gt;Three sites."
                "&lt;/p&gt;",
                "departments": [{"id": 1, "name": "Operations", "parent_id": None}],
                "offices": [{"id": 2, "name": "Columbus", "location": "Columbus, OH"}],
            },
            {"id": 2, "title": "Nurse", "absolute_url": "/acme/jobs/2", "location": None},
        ],
        "meta": {"total": 2},
    }
    board = read_json(GREENHOUSE, body)
    assert board.kind == "job_board" and board.problem is None
    director, nurse = board.items
    assert director.title == "Facilities Director" and director.location == "Columbus, OH"
    assert director.url == "https://boards.greenhouse.io/acme/jobs/127817"
    assert director.text == "Lead our facilities team. Three sites."
    assert director.published_at == date(2026, 11, 14)  # the writer's day, not UTC's
    assert nurse.url == "https://boards-api.greenhouse.io/acme/jobs/2" and nurse.location is None
    assert (board.published_at, board.date_source) == (date(2026, 11, 14), "board")


def test_lever() -> None:
    posting = {
        "id": "5ac21346-8e0c-4494-8e7a-3eb92ff77902",
        "text": "Revenue Cycle Manager",
        "categories": {"commitment": "Full-time", "location": "Denver, CO", "team": "Finance"},
        "country": "US",
        "createdAt": 1_763_632_800_000,  # 2025-11-20T10:00:00Z
        "description": "<div>Own the revenue cycle.</div>",
        "descriptionPlain": "Own the revenue cycle.",
        "lists": [{"text": "Requirements", "content": "<li>Five years</li>"}],
        "hostedUrl": "https://jobs.lever.co/acme/5ac21346-8e0c-4494-8e7a-3eb92ff77902",
        "applyUrl": "https://jobs.lever.co/acme/5ac21346-8e0c-4494-8e7a-3eb92ff77902/apply",
        "workplaceType": "on-site",
    }
    board = read_json(LEVER, [posting])
    (item,) = board.items
    assert (item.title, item.location, item.text) == (
        "Revenue Cycle Manager",
        "Denver, CO",
        "Own the revenue cycle.",
    )
    assert item.published_at == date(2025, 11, 20) and item.url == posting["hostedUrl"]
    empty = read_json(LEVER, [])
    assert (empty.kind, empty.items, empty.problem) == ("job_board", (), None)


def test_ashby_skips_unlisted_postings() -> None:
    listed = {
        "title": "Clinic Manager",
        "location": "Boise, ID",
        "department": "Operations",
        "isListed": True,
        "publishedAt": "2026-10-30T12:00:00.000+00:00",
        "jobUrl": "https://jobs.ashbyhq.com/acme/1b2c",
        "descriptionHtml": "<p>Run a clinic.</p>",
    }
    unlisted = {**listed, "title": "Secret role", "isListed": False}
    board = read_json(ASHBY, {"apiVersion": "1", "jobs": [listed, unlisted]})
    assert [(i.title, i.text, i.published_at) for i in board.items] == [
        ("Clinic Manager", "Run a clinic.", date(2026, 10, 30))
    ]


def test_fields_of_the_wrong_type_read_as_missing() -> None:
    body = {"jobs": [{"title": ["x"], "absolute_url": 7, "location": "nowhere"}, 3], "meta": {}}
    board = read_json(GREENHOUSE, body)
    assert (board.kind, board.items, board.problem) == ("job_board", (), None)


@pytest.mark.parametrize(
    ("url", "body", "kind", "problem"),
    [
        (GREENHOUSE, {"status": 404, "error": "Job not found"}, "job_board", "unknown_board"),
        (ASHBY, {"success": False}, "job_board", "unknown_board"),
        ("https://acme.example/api/data", {"hello": "world"}, "page", "unknown_json"),
        ("https://acme.example/api/data", "{not json", "page", "bad_json"),
        ("https://acme.example/api/data", "[" * 100_000 + "]" * 100_000, "page", "bad_json"),
    ],
)
def test_json_the_reader_does_not_know(url: str, body: object, kind: str, problem: str) -> None:
    found = read_json(url, body)
    assert (found.kind, found.problem, found.items) == (kind, problem, ())


def test_json_without_a_json_type_is_still_json() -> None:
    board = read_json(LEVER, [], content_type="text/plain")
    assert board.kind == "job_board" and board.problem is None
