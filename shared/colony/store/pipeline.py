"""The pipeline at a glance: one read over ENT-003 deals, ENT-005 runs, ENT-011 approval
items, ENT-012 outbox and ENT-002 contacts (AGT-001's ``pipeline_snapshot`` tool).

Exact numbers, aggregated in SQL in one statement so they are consistent with each other.
Takes the cursor of a transaction opened under the org (``Database.transaction(org_id)``):
RLS scopes every subquery, so none filters on org by itself.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_one

SNAPSHOT = """
SELECT
  (SELECT coalesce(jsonb_object_agg(stage, jsonb_build_object('deals', n, 'value', v)), '{}')
     FROM (SELECT stage, count(*) AS n, coalesce(sum(value), 0) AS v
           FROM deals GROUP BY stage) d) AS deals_by_stage,
  (SELECT coalesce(jsonb_object_agg(status, n), '{}')
     FROM (SELECT status, count(*) AS n FROM campaign_runs GROUP BY status) r) AS runs,
  (SELECT count(*) FROM approval_items WHERE status = 'pending') AS approvals_pending,
  (SELECT coalesce(jsonb_object_agg(status, n), '{}')
     FROM (SELECT status, count(*) AS n FROM outbox GROUP BY status) o) AS outbox,
  (SELECT count(*) FROM contacts) AS contacts
"""


def snapshot(cur: Any) -> Row:
    """``deals_by_stage`` (stage → {deals, value}), ``runs`` and ``outbox`` (status → count),
    ``approvals_pending`` and ``contacts`` (counts)."""
    row = fetch_one(cur, SNAPSHOT)
    assert row is not None  # an aggregate over no rows is still one row
    return row
