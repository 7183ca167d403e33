"""CRM webhook events kept before they are applied (``crm_events``, migration 0058): ``add``
keeps a batch (a second delivery of an event id adds nothing), ``pending`` lists what is
still to apply, oldest first, ``applied`` marks them with their outcome.

Every function takes a cursor from ``Database.transaction(org_id)``: RLS scopes it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store.rows import Row, fetch_all

ADD = """
INSERT INTO crm_events (org_id, provider, event_id, object_type, object_id, action, merged_ids,
                        occurred_at)
SELECT %s, %s, r.event_id, r.object_type, r.object_id, r.action, r.merged_ids, r.occurred_at
FROM jsonb_to_recordset(%s::jsonb)
     AS r(event_id text, object_type text, object_id text, action text, merged_ids jsonb,
          occurred_at timestamptz)
ON CONFLICT (org_id, provider, event_id) DO NOTHING
RETURNING event_id
"""
PENDING = """
SELECT event_id, object_type, object_id, action, merged_ids, occurred_at FROM crm_events
WHERE provider = %s AND applied_at IS NULL
ORDER BY occurred_at, event_id LIMIT %s
"""
APPLIED = """
UPDATE crm_events e SET applied_at = now(), outcome = r.outcome
FROM jsonb_to_recordset(%s::jsonb) AS r(event_id text, outcome text)
WHERE e.provider = %s AND e.event_id = r.event_id
"""


def add(cur: Any, org_id: str, provider: str, events: Sequence[Mapping[str, Any]]) -> int:
    """Keep ``events`` (``event_id``, ``object_type``, ``object_id``, ``action``,
    ``merged_ids``, ``occurred_at``); how many were new."""
    if not events:
        return 0
    rows = fetch_all(cur, ADD, (org_id, provider, json.dumps(list(events), default=str)))
    return len(rows)


def pending(cur: Any, provider: str, limit: int) -> list[Row]:
    return fetch_all(cur, PENDING, (provider, limit))


def applied(cur: Any, provider: str, outcomes: Mapping[str, str]) -> None:
    if outcomes:
        body = [{"event_id": k, "outcome": v} for k, v in outcomes.items()]
        cur.execute(APPLIED, (json.dumps(body), provider))
