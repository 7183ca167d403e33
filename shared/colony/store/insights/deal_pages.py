"""Deals as records (issue 34 item 1): the org's deals grouped by stage, and one deal with its
contact, its calls, the recommendations made about it and the decisions on them.

Every function takes a cursor from ``Database.transaction(org_id)`` (RLS scopes it)."""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

MAX_DEALS = 1000

_ALL = """
SELECT d.id, d.name, d.stage, d.value, d.next_action, d.close_date, d.updated_at,
       c.name AS contact, c.company
FROM deals d LEFT JOIN contacts c ON c.id = d.contact_id
ORDER BY d.stage, d.value DESC NULLS LAST, d.name, d.id LIMIT %s
"""
_ONE = """
SELECT d.id, d.external_id, d.name, d.stage, d.value, d.next_action, d.close_date,
       d.created_at, d.updated_at, d.contact_id, c.name AS contact, c.title AS contact_title,
       c.company, c.email AS contact_email
FROM deals d LEFT JOIN contacts c ON c.id = d.contact_id WHERE d.id = %s
"""
_CALLS = """
SELECT id, title, status, created_at, jsonb_array_length(signals) AS signals, summary
FROM recordings WHERE deal_id = %s ORDER BY created_at DESC, id
"""
# What was recommended about the deal: its updates (subject: the deal) and whatever the runs
# of its calls queued (KC candidates, the follow-up), each with its decision.
_RECOMMENDED = """
SELECT i.id, i.kind, i.status, i.source_agent, i.payload, i.edited_payload, i.decided_by,
       i.decided_at, i.created_at
FROM approval_items i
WHERE i.subject_id = %s
   OR i.run_id IN (SELECT 'rec:' || r.id FROM recordings r WHERE r.deal_id = %s)
ORDER BY i.created_at DESC, i.id LIMIT 200
"""


def by_stage(cur: Any) -> list[Row]:
    return fetch_all(cur, _ALL, (MAX_DEALS + 1,))


def deal(cur: Any, deal_id: str) -> dict[str, Any] | None:
    row = fetch_one(cur, _ONE, (deal_id,))
    if row is None:
        return None
    return {
        "deal": row,
        "calls": fetch_all(cur, _CALLS, (deal_id,)),
        "recommendations": fetch_all(cur, _RECOMMENDED, (deal_id, deal_id)),
    }
