"""A CRM backfill's job row: an ``import_jobs`` row of kind ``crm`` with no file, whose
position is ``cursor`` (the object type being read and the CRM's paging cursor), moved on
with each page in the page's own transaction (migration 0058). Its rejected or noted records
go to ``import_errors`` like a file's (``colony.store.tenants.imports.record_errors``).

Every function takes a cursor from ``Database.transaction(org_id)``: RLS scopes it."""

from __future__ import annotations

import json
from typing import Any

from colony.store.rows import Row, fetch_one
from colony.store.tenants.imports import JOB_COLUMNS

COLUMNS = JOB_COLUMNS + ", cursor"
ACTIVE = f"""
SELECT {COLUMNS} FROM import_jobs WHERE kind = 'crm' AND status IN ('queued', 'running', 'paused')
"""
CREATE = f"""
INSERT INTO import_jobs (org_id, kind, format, filename, status, requested_by, cursor,
                         rows_total)
VALUES (%s, 'crm', 'hubspot', %s, 'queued', %s, %s::jsonb, %s)
RETURNING {COLUMNS}
"""
LATEST = f"""
SELECT {COLUMNS} FROM import_jobs WHERE kind = 'crm' ORDER BY created_at DESC, id LIMIT 1
"""
JOB = f"SELECT {COLUMNS} FROM import_jobs WHERE id = %s AND kind = 'crm'"
LOCK = JOB + " FOR UPDATE"
RUNNING = """
UPDATE import_jobs SET status = 'running', failure = NULL,
    started_at = coalesce(started_at, now())
WHERE id = %s AND status IN ('queued', 'running')
"""
RESUME = (
    "UPDATE import_jobs SET status = 'queued', failure = NULL WHERE id = %s AND status = 'paused'"
)
CHECKPOINT = """
UPDATE import_jobs SET cursor = %s::jsonb, rows_done = rows_done + %s,
    rows_created = rows_created + %s, rows_updated = rows_updated + %s,
    rows_rejected = rows_rejected + %s
WHERE id = %s
"""
PAUSE = """
UPDATE import_jobs SET status = 'paused', failure = %s
WHERE id = %s AND status IN ('queued', 'running')
"""
FINISH = """
UPDATE import_jobs SET status = 'completed', finished_at = now()
WHERE id = %s AND status = 'running'
"""


def active(cur: Any) -> Row | None:
    """The org's backfill that has not ended (at most one: a unique index)."""
    return fetch_one(cur, ACTIVE)


def latest(cur: Any) -> Row | None:
    return fetch_one(cur, LATEST)


def create(
    cur: Any, org_id: str, name: str, requested_by: str, cursor: dict[str, Any], total: int | None
) -> Row:
    row = fetch_one(cur, CREATE, (org_id, name, requested_by, json.dumps(cursor), total))
    assert row is not None
    return row


def job(cur: Any, job_id: str, *, lock: bool = False) -> Row | None:
    return fetch_one(cur, LOCK if lock else JOB, (job_id,))


def running(cur: Any, job_id: str) -> None:
    cur.execute(RUNNING, (job_id,))


def resume(cur: Any, job_id: str) -> None:
    cur.execute(RESUME, (job_id,))


def checkpoint(
    cur: Any, job_id: str, cursor: dict[str, Any], done: int, counts: tuple[int, int, int]
) -> None:
    """Move the job to ``cursor``: ``done`` records more, (created, updated, rejected)."""
    cur.execute(CHECKPOINT, (json.dumps(cursor), done, *counts, job_id))


def pause(cur: Any, job_id: str, reason: str) -> None:
    cur.execute(PAUSE, (reason[:500], job_id))


def finish(cur: Any, job_id: str) -> None:
    cur.execute(FINISH, (job_id,))
