"""Public job boards under their real hostnames, in their real response shapes.

=========================  ============================================  ====================
host                       path                                          answers
=========================  ============================================  ====================
boards-api.greenhouse.io   ``/v1/boards/{token}/jobs[?content=true]``    ``{"jobs", "meta"}``
api.lever.co               ``/v0/postings/{company}?mode=json``          a list of postings
api.ashbyhq.com            ``/posting-api/job-board/{name}``             ``{"apiVersion",
                                                                         "jobs"}``
boards.greenhouse.io,      ``/{token}`` (the page a careers page links)  HTML, one link a job
jobs.lever.co,
jobs.ashbyhq.com
=========================  ============================================  ====================

An unknown board is a 404 in the provider's shape. Ids are derived from the board and title,
so a board reads the same on every run.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import re
import uuid
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from colony.testing.web.pages import SCHEME, Page, Site, on

Kind = Literal["greenhouse", "lever", "ashby"]
KINDS: tuple[Kind, ...] = ("greenhouse", "lever", "ashby")
JSON = "application/json; charset=utf-8"
_PUBLIC = {
    "greenhouse": "boards.greenhouse.io",
    "lever": "jobs.lever.co",
    "ashby": "jobs.ashbyhq.com",
}
_API = {
    "greenhouse": "boards-api.greenhouse.io",
    "lever": "api.lever.co",
    "ashby": "api.ashbyhq.com",
}


@dataclass(frozen=True, slots=True)
class Job:
    title: str
    posted: date
    location: str = "Main campus"
    department: str = "Operations"


@dataclass(frozen=True, slots=True)
class Board:
    kind: Kind
    token: str
    company: str
    jobs: tuple[Job, ...]


def board_url(kind: Kind, token: str) -> str:
    """The public board a careers page links to."""
    return f"{SCHEME}://{_PUBLIC[kind]}/{token}"


def _id(board: Board, job: Job) -> uuid.UUID:
    digest = hashlib.sha256(f"{board.kind}/{board.token}/{job.title}".encode()).digest()
    return uuid.UUID(bytes=digest[:16], version=4)


def _posting(board: Board, job: Job) -> tuple[str, str, str, str]:
    """A posting's id, its URL on the public board, and its description as HTML and text."""
    ident = str(_id(board, job))
    plain = (
        f"{board.company} is hiring a {job.title} ({job.department}, {job.location}). "
        f"Posted {job.posted.isoformat()}."
    )
    return (
        ident,
        f"{board_url(board.kind, board.token)}/{ident}",
        f"<p>{html.escape(plain)}</p>",
        plain,
    )


def _greenhouse(board: Board, content: bool) -> dict[str, Any]:
    jobs = []
    for job in board.jobs:
        number = _id(board, job).int % 10_000_000
        stamp = on(job.posted).isoformat()
        item: dict[str, Any] = {
            "absolute_url": f"{board_url('greenhouse', board.token)}/jobs/{number}",
            "data_compliance": [
                {"type": "gdpr", "requires_consent": False, "retention_period": None}
            ],
            "internal_job_id": number + 1,
            "location": {"name": job.location},
            "metadata": None,
            "id": number,
            "updated_at": stamp,
            "requisition_id": f"REQ-{number % 10_000:04d}",
            "title": job.title,
            "company_name": board.company,
            "first_published": stamp,
        }
        if content:
            item["content"] = html.escape(_posting(board, job)[2])
            item["departments"] = [
                {"id": 1, "name": job.department, "child_ids": [], "parent_id": None}
            ]
            item["offices"] = [
                {
                    "id": 2,
                    "name": job.location,
                    "location": job.location,
                    "child_ids": [],
                    "parent_id": None,
                }
            ]
        jobs.append(item)
    return {"jobs": jobs, "meta": {"total": len(jobs)}}


def _lever(board: Board, job: Job) -> dict[str, Any]:
    ident, hosted, markup, plain = _posting(board, job)
    return {
        "id": ident,
        "text": job.title,
        "categories": {
            "commitment": "Full-time",
            "department": job.department,
            "location": job.location,
            "team": job.department,
            "allLocations": [job.location],
        },
        "country": "US",
        "createdAt": int(on(job.posted).timestamp() * 1000),
        "description": markup,
        "descriptionPlain": plain,
        "lists": [{"text": "What you will do", "content": f"<li>{html.escape(job.title)}</li>"}],
        "additional": "",
        "additionalPlain": "",
        "hostedUrl": hosted,
        "applyUrl": f"{hosted}/apply",
        "workplaceType": "onsite",
    }


def _ashby(board: Board, job: Job) -> dict[str, Any]:
    ident, url, markup, plain = _posting(board, job)
    return {
        "id": ident,
        "title": job.title,
        "department": job.department,
        "team": job.department,
        "employmentType": "FullTime",
        "location": job.location,
        "secondaryLocations": [],
        "publishedAt": on(job.posted).isoformat(timespec="milliseconds"),
        "isListed": True,
        "isRemote": False,
        "workplaceType": "OnSite",
        "address": {"postalAddress": {"addressLocality": job.location}},
        "jobUrl": url,
        "applyUrl": f"{url}/application",
        "descriptionHtml": markup,
        "descriptionPlain": plain,
        "shouldDisplayCompensationOnJobPostings": False,
    }


def _json(body: Any, board: Board | None = None, status: int = 200) -> Page:
    latest = max((job.posted for job in board.jobs), default=None) if board else None
    return Page(json.dumps(body).encode(), JSON, status, modified=on(latest) if latest else None)


def _listing(board: Board) -> Page:
    items = "".join(
        f'<li><a href="/{board.token}/{_id(board, job)}">{html.escape(job.title)}</a> '
        f"<span>{html.escape(job.location)}</span></li>"
        for job in board.jobs
    )
    name = html.escape(board.company)
    body = f"<!DOCTYPE html><html><head><title>Jobs at {name}</title></head><body>"
    body += f"<h1>Current openings at {name}</h1><ul>{items}</ul></body></html>"
    return Page(body.encode())


class JobBoards:
    """Every company's board, looked up when a request arrives (boards added later count)."""

    def __init__(self) -> None:
        self._boards: dict[tuple[Kind, str], Board] = {}

    def add(self, board: Board) -> None:
        self._boards[(board.kind, board.token)] = board

    def _api(self, kind: Kind, target: str) -> Page | None:
        path, _, query = target.partition("?")
        patterns = {
            "greenhouse": r"/v1/boards/([^/]+)/jobs",
            "lever": r"/v0/postings/([^/]+)",
            "ashby": r"/posting-api/job-board/([^/]+)",
        }
        match = re.fullmatch(patterns[kind], path)
        if match is None:
            return None
        board = self._boards.get((kind, match.group(1)))
        if board is None:
            missing = {
                "greenhouse": {"status": 404, "error": "Job not found"},
                "lever": {"ok": False, "error": "Document not found"},
            }
            return _json(missing.get(kind, {"success": False, "errors": ["not_found"]}), status=404)
        if kind == "greenhouse":
            return _json(_greenhouse(board, "content=true" in query), board)
        if kind == "lever":  # without mode=json Lever answers with its HTML board
            postings = [_lever(board, job) for job in board.jobs]
            return _json(postings, board) if "mode=json" in query else _listing(board)
        return _json({"apiVersion": "1", "jobs": [_ashby(board, job) for job in board.jobs]}, board)

    def _public(self, kind: Kind, target: str) -> Page | None:
        board = self._boards.get((kind, target.split("?", 1)[0].strip("/").split("/", 1)[0]))
        return _listing(board) if board is not None else None

    def sites(self) -> list[Site]:
        found: list[Site] = []
        for kind in KINDS:
            found.append(Site(_API[kind], dynamic=functools.partial(self._api, kind)))
            found.append(Site(_PUBLIC[kind], dynamic=functools.partial(self._public, kind)))
        return found
