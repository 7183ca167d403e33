"""What an org's research fetched (``research_sources``) and the passages of its text
(``research_passages``), migrations 0042 and 0043 (a rendered page's screenshot).

A source is one URL of one company as last fetched for the org: the outcome, what it was
read as, its dates, the validators for the next conditional request, and the names and
hashes of its stored bytes, text and screenshot (the assets bucket, under ``research/<org>/``). Its
passages carry their embedding, so AGT-003 is given the ones nearest what the org looks for,
each with the URL and date it came from.

Every function takes a cursor from ``Database.transaction(org_id)``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from colony.store.db import Row, fetch_all
from colony.vectors import sql_text

COLUMNS = (
    "domain",
    "url",
    "final_url",
    "role",
    "kind",
    "outcome",
    "status",
    "detail",
    "problem",
    "title",
    "content_type",
    "charset",
    "fetched_at",
    "downloaded_at",
    "published_at",
    "date_source",
    "content_hash",
    "raw_object",
    "text_hash",
    "text_object",
    "text_chars",
    "etag",
    "last_modified",
    "needs_browser",
    "pass",
    "screenshot_object",
    "screenshot_hash",
    "render_outcome",
    "render_detail",
)
# What a person is shown of a source (the CLI, the admin API): where, what came of it, when;
# never its text or where we keep it.
SHOWN = (
    "url",
    "final_url",
    "role",
    "kind",
    "outcome",
    "status",
    "detail",
    "problem",
    "title",
    "fetched_at",
    "published_at",
    "needs_browser",
    "render_outcome",
    "text_chars",
)
UPSERT = f"""
INSERT INTO research_sources (org_id, id, {", ".join(COLUMNS)})
VALUES (%s, %s, {", ".join(["%s"] * len(COLUMNS))})
ON CONFLICT (org_id, id) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS if c not in ("domain", "url"))}
"""
# A 304: the stored copy holds; only when it was confirmed changes.
TOUCH = """
UPDATE research_sources SET fetched_at = %s, outcome = 'not_modified', status = 304, pass = %s
WHERE id = %s
"""
# A fetch that brought no body (a 5xx, a refusal, a timeout) over a copy we keep: the copy,
# its validators, passages and the time it was last fetched or confirmed stand; the row
# says what this fetch came to.
MISSED = """
UPDATE research_sources SET outcome = %s, status = %s, detail = %s, pass = %s
WHERE id = %s
"""
FOR_DOMAIN = "SELECT * FROM research_sources WHERE domain = %s ORDER BY role, url"
DELETE_PASSAGES = "DELETE FROM research_passages WHERE source_id = %s"
INSERT_PASSAGE = """
INSERT INTO research_passages (org_id, source_id, ord, text, published_at, model, embedding)
VALUES (%s, %s, %s, %s, %s, %s, %s::vector)
"""
# The passages of a company nearest the query, each with where and when it was published.
# An exact scan (a company has tens of passages); a passage embedded by another model is
# never compared.
NEAREST = """
SELECT p.source_id, p.ord, p.text, s.url, s.final_url, s.title, s.kind,
       coalesce(p.published_at, s.published_at) AS published_at, s.fetched_at,
       1 - (p.embedding <=> %s::vector) AS similarity
FROM research_passages p JOIN research_sources s ON s.id = p.source_id
WHERE s.domain = %s AND p.model = %s
ORDER BY p.embedding <=> %s::vector, p.source_id, p.ord
LIMIT %s
"""
EXPIRED = """
SELECT id, raw_object, text_object, screenshot_object FROM research_sources
WHERE coalesce(downloaded_at, fetched_at) < %s ORDER BY fetched_at
"""
FORGET = "DELETE FROM research_sources WHERE id = ANY(%s::text[])"
# The stored pages that name a person (a leadership page naming an erased contact).
MENTIONING = r"""
SELECT DISTINCT s.id, s.raw_object, s.text_object, s.screenshot_object
FROM research_sources s JOIN research_passages p ON p.source_id = s.id
WHERE p.text ILIKE ANY(%s::text[])
ORDER BY s.id
"""
BY_IDS = "SELECT * FROM research_sources WHERE id = ANY(%s::text[])"
# Our stored copy of each page a signal names (its final URL), the latest fetched first.
STORED_COPIES = """
SELECT DISTINCT ON (final_url) final_url, text_object, fetched_at, downloaded_at
FROM research_sources
WHERE final_url = ANY(%s::text[]) AND text_object IS NOT NULL
ORDER BY final_url, fetched_at DESC
"""


def source_id(domain: str, url: str) -> str:
    """A source's id: the same URL researched for the same company is one row."""
    return hashlib.sha256(f"{domain}\n{url}".encode()).hexdigest()[:24]


def stored_copies(cur: Any, urls: Sequence[str]) -> list[Row]:
    """Where our copy of each of ``urls`` is kept (``text_object``) and when it was fetched."""
    return fetch_all(cur, STORED_COPIES, (list(urls),)) if urls else []


def for_domain(cur: Any, domain: str) -> list[Row]:
    return fetch_all(cur, FOR_DOMAIN, (domain,))


def by_ids(cur: Any, ids: Sequence[str]) -> list[Row]:
    return fetch_all(cur, BY_IDS, (list(ids),)) if ids else []


def save(cur: Any, org_id: str, source: Mapping[str, Any]) -> str:
    """Insert or replace the source of ``source["url"]``; its id."""
    sid = source_id(source["domain"], source["url"])
    cur.execute(UPSERT, (org_id, sid, *(source.get(c) for c in COLUMNS)))
    return sid


def touch(cur: Any, sid: str, fetched_at: datetime, pass_no: int) -> None:
    """A conditional request answered 304: the stored copy was confirmed at ``fetched_at``."""
    cur.execute(TOUCH, (fetched_at, pass_no, sid))


def missed(
    cur: Any, sid: str, outcome: str, status: int | None, detail: str | None, pass_no: int
) -> None:
    """A fetch of a source whose copy we keep brought no body: only what it came to changes."""
    cur.execute(MISSED, (outcome, status, detail, pass_no, sid))


def replace_passages(
    cur: Any,
    org_id: str,
    sid: str,
    passages: Sequence[tuple[str, date | None]],
    model: str,
    vectors: Sequence[Sequence[float]],
) -> int:
    """The source's passages are now ``passages`` (text, own date), with their ``vectors``
    from ``model``."""
    cur.execute(DELETE_PASSAGES, (sid,))
    for ord_, ((text, day), vector) in enumerate(zip(passages, vectors, strict=True)):
        cur.execute(INSERT_PASSAGE, (org_id, sid, ord_, text, day, model, sql_text(vector)))
    return len(passages)


def nearest(cur: Any, domain: str, vector: Sequence[float], model: str, limit: int) -> list[Row]:
    """The company's ``limit`` passages nearest ``vector``, nearest first."""
    literal = sql_text(vector)
    return fetch_all(cur, NEAREST, (literal, domain, model, literal, limit))


OBJECTS = ("raw_object", "text_object", "screenshot_object")  # what a source keeps in the bucket


def objects(source: Row) -> list[str]:
    """The names of every object ``source`` keeps (bytes, text, screenshot)."""
    return [source[c] for c in OBJECTS if source.get(c)]


def expired(cur: Any, cutoff: datetime) -> list[Row]:
    """Sources whose stored copy is older than ``cutoff``, with the objects that hold it."""
    return fetch_all(cur, EXPIRED, (cutoff,))


def mentioning(cur: Any, needles: Sequence[str]) -> list[Row]:
    """Sources whose passages contain any of ``needles`` (case-insensitive, literally)."""
    patterns = [
        "%" + n.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        for n in needles
        if n
    ]
    return fetch_all(cur, MENTIONING, (patterns,)) if patterns else []


def forget(cur: Any, ids: Sequence[str]) -> int:
    """Delete the sources (and, by cascade, their passages); rows deleted."""
    cur.execute(FORGET, (list(ids),))
    return int(cur.rowcount)
