"""The pipeline at a glance: one read over ENT-003 deals, ENT-005 runs, ENT-011 approval
items, ENT-012 outbox and ENT-002 contacts (AGT-001's ``pipeline_snapshot`` tool), and deals
by stage with the largest of each (the /overview pipeline chart, ``GET /pipeline``).

Exact numbers, aggregated in SQL in one statement so they are consistent with each other.
Takes the cursor of a transaction opened under the org (``Database.transaction(org_id)``):
RLS scopes every subquery, so none filters on org by itself.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

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
# Per stage: its deals, their value, and its ``top`` largest deals (name, value), largest first.
BY_STAGE = """
SELECT stage, count(*) AS deals, coalesce(sum(value), 0) AS value,
       coalesce(jsonb_agg(jsonb_build_object('name', name, 'value', value)
                          ORDER BY rank) FILTER (WHERE rank <= %s), '[]') AS top
FROM (SELECT stage, name, value,
             row_number() OVER (PARTITION BY stage ORDER BY value DESC NULLS LAST, name, id)
                 AS rank
      FROM deals) d
GROUP BY stage ORDER BY stage
"""


def snapshot(cur: Any) -> Row:
    """``deals_by_stage`` (stage → {deals, value}), ``runs`` and ``outbox`` (status → count),
    ``approvals_pending`` and ``contacts`` (counts)."""
    row = fetch_one(cur, SNAPSHOT)
    assert row is not None  # an aggregate over no rows is still one row
    return row


def by_stage(cur: Any, top: int) -> list[Row]:
    """``stage``, ``deals``, ``value`` (their sum; unvalued deals count as 0) and ``top``:
    the stage's ``top`` largest deals as ``{name, value}``, largest first."""
    return fetch_all(cur, BY_STAGE, (top,))
