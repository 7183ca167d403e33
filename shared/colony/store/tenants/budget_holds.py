"""Campaign work held while an org's budget is spent and capped (``budget_holds``).

A hold is the event that would have started one durable step of a campaign run (a handoff to
a specialist, or a sequence's later step), kept as it was delivered, with the topic it came
on, until the budget allows it (``colony.flows.tenants.budget``). One hold per (run, step): a
redelivered event, or the same step held again after a release, is the same row, waiting
again. A released hold keeps its row (``released_at``), so what waited and for how long stays
on the record.

Every function takes a cursor from ``Database.transaction(org_id)``: row-level security
scopes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store.db import Row, fetch_all

HOLD = """
INSERT INTO budget_holds (org_id, run_id, step_key, campaign_id, topic, event)
VALUES (%s, %s, %s, %s, %s, %s::jsonb)
ON CONFLICT (org_id, run_id, step_key) DO UPDATE
    SET event = EXCLUDED.event, topic = EXCLUDED.topic, held_at = now(), released_at = NULL
"""
# Oldest first, a page at a time after the last one published (``after``: a hold's id).
WAITING = """
SELECT id, topic, event FROM budget_holds
WHERE released_at IS NULL AND id > %s ORDER BY id LIMIT %s
"""
RELEASED = "UPDATE budget_holds SET released_at = now() WHERE id = ANY(%s::bigint[])"
WAITING_BY_CAMPAIGN = """
SELECT campaign_id, count(*) AS held FROM budget_holds WHERE released_at IS NULL
GROUP BY campaign_id
"""


def hold(
    cur: Any,
    org_id: str,
    run_id: str,
    step_key: str,
    campaign_id: str,
    topic: str,
    event: Mapping[str, Any],
) -> None:
    """Keep ``event`` (its JSON) until the budget allows the step it would start."""
    cur.execute(HOLD, (org_id, run_id, step_key, campaign_id, topic, json.dumps(dict(event))))


def waiting(cur: Any, after: int, limit: int) -> list[Row]:
    """Up to ``limit`` held events (``id``, ``topic``, ``event``) after hold ``after``."""
    return fetch_all(cur, WAITING, (after, limit))


def released(cur: Any, hold_ids: Sequence[int]) -> None:
    cur.execute(RELEASED, (list(hold_ids),))


def waiting_by_campaign(cur: Any) -> dict[str, int]:
    """Held steps per campaign."""
    return {str(r["campaign_id"]): int(r["held"]) for r in fetch_all(cur, WAITING_BY_CAMPAIGN)}
