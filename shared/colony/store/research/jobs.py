"""Each org's research of a company (``research_jobs``, migration 0042): one row per (org,
domain), resumable. A pass keeps what it still has to fetch (``frontier``) and what it tried
(``visited``) on the row, so a task that ends early (a site's pace, a crash) is taken up by
the next one where it stopped. One task works a pass at a time: ``claim`` takes a lease
that a crashed task's lapses. ``waiters`` are published when the pass ends and cleared
after, so a crash in between publishes them again (their receivers are idempotent).

Freshness is judged on the database's clock, the one every instance shares.
Every function takes a cursor from ``Database.transaction(org_id)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store.db import Row, fetch_one

STALLED_AFTER = 1800  # seconds a running pass may go untouched before it is woken
# A running pass no task holds or has touched for STALLED_AFTER: its tasks' retries ran out
# or a queue was purged (a request for the company or the research-sweep schedule wakes it).
IS_STALLED = f"""status = 'running' AND (lease_until IS NULL OR lease_until < now())
        AND touched_at < now() - interval '{STALLED_AFTER} seconds'"""
GET = f"""
SELECT *, (status = 'done' AND finished_at > now() - make_interval(secs => %s)) AS fresh,
       ({IS_STALLED}) AS stalled
FROM research_jobs WHERE domain = %s
"""
STALLED = f"""
SELECT domain, pass FROM research_jobs WHERE {IS_STALLED} ORDER BY touched_at, domain LIMIT %s
"""
# A new pass: the row created, or a finished one started again (fresh frontier, pass + 1).
# A running pass is left as it is (the caller adds its waiter to it).
START = """
INSERT INTO research_jobs (org_id, domain, status, frontier, requested_by)
VALUES (%s, %s, 'running', %s::jsonb, %s)
ON CONFLICT (org_id, domain) DO UPDATE SET
    status = 'running', outcome = NULL, pass = research_jobs.pass + 1,
    frontier = EXCLUDED.frontier, visited = '[]', pages = 0, downloads = 0, lease_until = NULL,
    requested_by = EXCLUDED.requested_by, started_at = now(), touched_at = now(),
    finished_at = NULL
WHERE research_jobs.status = 'done'
RETURNING pass
"""
ADD_WAITER = """
UPDATE research_jobs
SET waiters = CASE WHEN waiters @> %s::jsonb THEN waiters ELSE waiters || %s::jsonb END
WHERE domain = %s AND status = 'running'
"""
CLAIM = """
UPDATE research_jobs SET lease_until = clock_timestamp() + make_interval(secs => %s),
    touched_at = now()
WHERE domain = %s AND pass = %s
  AND (status = 'running' AND (lease_until IS NULL OR lease_until < clock_timestamp())
       OR status = 'done' AND waiters <> '[]')
RETURNING *
"""
SAVE = """
UPDATE research_jobs SET frontier = %s::jsonb, visited = %s::jsonb, pages = %s, downloads = %s,
    touched_at = now()
WHERE domain = %s AND pass = %s AND status = 'running'
"""
WAKE = """
UPDATE research_jobs SET wakes = wakes + 1, lease_until = NULL, touched_at = now()
WHERE domain = %s AND pass = %s AND status = 'running'
RETURNING wakes
"""
FINISH = """
UPDATE research_jobs SET status = 'done', outcome = %s, finished_at = now(), frontier = '[]',
    lease_until = NULL
WHERE domain = %s AND pass = %s AND status = 'running'
RETURNING waiters
"""
CLEAR_WAITERS = """
UPDATE research_jobs SET waiters = '[]', lease_until = NULL
WHERE domain = %s AND pass = %s AND status = 'done'
"""


def get(cur: Any, domain: str, fresh_seconds: float) -> Row | None:
    """The company's job, with ``fresh`` (a pass finished within ``fresh_seconds``) and
    ``stalled`` (a running pass no task has claimed, saved or woken for ``STALLED_AFTER``)."""
    return fetch_one(cur, GET, (fresh_seconds, domain))


def stalled(cur: Any, limit: int) -> list[tuple[str, int]]:
    """The org's stalled passes, longest untouched first: (domain, pass) each."""
    cur.execute(STALLED, (limit,))
    return [(str(domain), int(pass_no)) for domain, pass_no in cur.fetchall()]


def start(
    cur: Any, org_id: str, domain: str, frontier: Sequence[Mapping[str, Any]], requested_by: str
) -> int | None:
    """Begin a pass over ``domain`` unless one is running: its number, else None."""
    row = fetch_one(cur, START, (org_id, domain, json.dumps(list(frontier)), requested_by))
    return int(row["pass"]) if row else None


def add_waiter(cur: Any, domain: str, waiter: Mapping[str, Any]) -> bool:
    """Publish ``waiter`` when the running pass ends (the same waiter twice is one: True
    both times); False when no pass is running (it has just ended: the caller goes on)."""
    one = json.dumps([dict(waiter)])
    cur.execute(ADD_WAITER, (one, one, domain))
    return bool(cur.rowcount == 1)


def claim(cur: Any, domain: str, pass_no: int, lease_seconds: float) -> Row | None:
    """Take pass ``pass_no`` for ``lease_seconds``: the job, or None when it is not that
    pass's to work (another task holds it, or it ended and has nothing left to publish)."""
    return fetch_one(cur, CLAIM, (lease_seconds, domain, pass_no))


def save(
    cur: Any,
    domain: str,
    pass_no: int,
    frontier: Sequence[Mapping[str, Any]],
    visited: Sequence[Sequence[str]],
    pages: int,
    downloads: int,
) -> bool:
    """Keep a running pass's progress; False if the pass is no longer the running one."""
    cur.execute(
        SAVE,
        (json.dumps(list(frontier)), json.dumps(list(visited)), pages, downloads, domain, pass_no),
    )
    return bool(cur.rowcount == 1)


def wake(cur: Any, domain: str, pass_no: int) -> int | None:
    """Hand the pass to the next task (the lease released): its number, None if ended."""
    row = fetch_one(cur, WAKE, (domain, pass_no))
    return int(row["wakes"]) if row else None


def finish(cur: Any, domain: str, pass_no: int, outcome: str) -> list[dict[str, Any]] | None:
    """End the running pass with ``outcome``; its waiters (None: it had ended)."""
    row = fetch_one(cur, FINISH, (outcome, domain, pass_no))
    return list(row["waiters"]) if row else None


def clear_waiters(cur: Any, domain: str, pass_no: int) -> None:
    """The ended pass's waiters were published."""
    cur.execute(CLEAR_WAITERS, (domain, pass_no))
