"""ENT-009, the daily brief: one stored brief per org and day, and the numbers it reports.

Every function takes the cursor of a transaction opened under the brief's org
(``Database.transaction(org_id)``), so RLS scopes each statement: the aggregates count one
org's rows without filtering on org themselves. ``daily_briefs`` is unique on (org, day):
``store`` keeps the first brief of a day and reports whether it was this one.

What each number means is the brief's own rule (``colony.flows.insights.brief``); the windows passed
in are [start, end) between two instants: the org's local-day boundaries (its local midnights,
``colony.policy.local_day``), so a day is 23 or 25 hours across a daylight-saving change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

STORED = """
SELECT id, brief_date, content, sections, data_snapshot, llm_call_id, created_at
FROM daily_briefs WHERE brief_date = %s
"""
PRIOR = """
SELECT id, brief_date, content FROM daily_briefs WHERE brief_date < %s
ORDER BY brief_date DESC LIMIT 1
"""
STORE = """
INSERT INTO daily_briefs (org_id, brief_date, content, sections, data_snapshot, llm_call_id)
VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s)
ON CONFLICT (org_id, brief_date) DO NOTHING
RETURNING brief_date
"""
DEALS_BY_STAGE = "SELECT stage, count(*) AS n FROM deals GROUP BY stage ORDER BY stage"
SENT = """
SELECT count(*) AS sent,
       count(*) FILTER (WHERE status = 'bounced') AS bounced,
       count(*) FILTER (WHERE status = 'replied') AS replied
FROM outbox
WHERE created_at >= %s AND created_at < %s AND status NOT IN ('queued', 'blocked')
"""
PUBLISHED = """
SELECT count(*) AS n FROM published_content WHERE published_at >= %s AND published_at < %s
"""
PAUSED = "SELECT count(*) AS n FROM campaigns WHERE status = 'paused'"


def stored(cur: Any, day: date) -> Row | None:
    """The brief stored for ``day`` (None: none yet)."""
    return fetch_one(cur, STORED, (day,))


def prior(cur: Any, day: date) -> Row | None:
    """The latest brief before ``day`` (its id, date and content), for continuity."""
    return fetch_one(cur, PRIOR, (day,))


def store(
    cur: Any,
    org_id: str,
    day: date,
    content: str,
    sections: Mapping[str, Any],
    data: Mapping[str, Any],
    call_id: str | None = None,
) -> bool:
    """Store the brief for ``day`` unless one already is; True if this one was stored.
    ``call_id`` is the model call that wrote it (``colony explain`` follows it)."""
    params = (org_id, day, content, json.dumps(sections), json.dumps(data), call_id)
    return fetch_one(cur, STORE, params) is not None


def deals_by_stage(cur: Any) -> dict[str, int]:
    """Stage → number of deals, now."""
    return {r["stage"]: int(r["n"]) for r in fetch_all(cur, DEALS_BY_STAGE)}


def messages_sent(cur: Any, start: datetime, end: datetime) -> Row:
    """Outbox rows created in [start, end) that left the outbox: ``sent``, and of those
    ``bounced`` and ``replied``."""
    row = fetch_one(cur, SENT, (start, end))
    assert row is not None  # an aggregate always returns a row
    return row


def content_published(cur: Any, start: datetime, end: datetime) -> int:
    """Content pieces published in [start, end)."""
    return _count(cur, PUBLISHED, (start, end))


def paused_campaigns(cur: Any) -> int:
    """Campaigns paused, now."""
    return _count(cur, PAUSED)


def _count(cur: Any, sql: str, params: tuple[Any, ...] = ()) -> int:
    row = fetch_one(cur, sql, params)
    assert row is not None  # an aggregate always returns a row
    return int(row["n"])


LATEST = """
SELECT brief_date, data_snapshot FROM daily_briefs ORDER BY brief_date DESC LIMIT 1
"""


def latest(cur: Any) -> Row | None:
    """The org's newest brief's day and numbers (``data_snapshot``: SQL aggregates only)."""
    return fetch_one(cur, LATEST)
