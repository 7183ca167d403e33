"""Calls as records (issue 34 item 1): the org's recordings, newest first, with their deal,
and what came of one (its pass-1 signals and summary are on its row; the recommendations are
the approval items its run queued: deal updates, KC candidates, the follow-up).

Every function takes a cursor from ``Database.transaction(org_id)`` (RLS scopes it)."""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

_PAGE = """
SELECT r.id, r.title, r.status, r.created_at, r.processed_at, r.deal_id, d.name AS deal,
       jsonb_array_length(r.signals) AS signals, r.summary IS NOT NULL AS summarised
FROM recordings r LEFT JOIN deals d ON d.id = r.deal_id
ORDER BY r.created_at DESC, r.id LIMIT %s OFFSET %s
"""
_ONE = """
SELECT r.id, r.title, r.status, r.error, r.created_at, r.processed_at, r.deal_id,
       d.name AS deal, d.stage AS deal_stage, r.transcript_uri, r.signals, r.summary,
       r.transcript_tokens
FROM recordings r LEFT JOIN deals d ON d.id = r.deal_id WHERE r.id = %s
"""
_RECOMMENDATIONS = """
SELECT id, kind, status, source_agent, payload, decided_by, decided_at, created_at
FROM approval_items WHERE run_id = 'rec:' || %s ORDER BY created_at, source_agent, kind, id
"""


def page(cur: Any, limit: int, offset: int) -> list[Row]:
    return fetch_all(cur, _PAGE, (limit, offset))


def call(cur: Any, recording_id: str) -> Row | None:
    return fetch_one(cur, _ONE, (recording_id,))


def recommendations(cur: Any, recording_id: str) -> list[Row]:
    return fetch_all(cur, _RECOMMENDATIONS, (recording_id,))
