"""ENT-011, the approval queue: what agents propose and people decide (CONST-001).

Every function takes the cursor of a transaction opened under the item's org
(``Database.transaction(org_id)``), so RLS scopes each statement; a flow that adds an item
inside a durable step's ``apply`` passes that step's cursor, and the item commits with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one, fetch_value

ADD = """
INSERT INTO approval_items (org_id, kind, source_agent, run_id, subject_id, payload)
VALUES (%s, %s, %s, %s, %s, %s::jsonb) RETURNING id
"""
FOR_UPDATE = """
SELECT id, kind, status, payload, edited_payload, run_id, subject_id
FROM approval_items WHERE id = %s FOR UPDATE
"""
DECIDE = """
UPDATE approval_items SET status = %s, edited_payload = COALESCE(%s::jsonb, edited_payload),
    decided_by = %s, decided_at = now() WHERE id = %s
"""
BY_RUN = "SELECT id, status, payload FROM approval_items WHERE run_id = %s AND kind = %s"
STATUSES = "SELECT id, status FROM approval_items WHERE id = ANY(%s::text[])"
KIND = "SELECT kind FROM approval_items WHERE id = %s"
PENDING = """
SELECT a.id, a.kind, a.source_agent, a.subject_id, a.payload, a.created_at,
       k.object_name AS kit_object
FROM approval_items a LEFT JOIN deployment_kits k ON k.approval_item_id = a.id
WHERE a.status = 'pending' AND (%s::text IS NULL OR a.kind = %s)
ORDER BY a.created_at DESC, a.id LIMIT %s
"""
PENDING_COUNT = "SELECT count(*) FROM approval_items WHERE status = 'pending'"


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def add(
    cur: Any,
    org_id: str,
    kind: str,
    source_agent: str,
    payload: Mapping[str, Any],
    *,
    subject_id: str | None = None,
    run_id: str | None = None,
) -> str:
    """Queue one item for a person's decision; returns its id."""
    return str(
        fetch_value(cur, ADD, (org_id, kind, source_agent, run_id, subject_id, _json(payload)))
    )


def lock(cur: Any, item_id: str) -> Row | None:
    """The item, locked until the transaction ends (None: not in this org)."""
    return fetch_one(cur, FOR_UPDATE, (item_id,))


def decide(
    cur: Any, item_id: str, status: str, decided_by: str, edited: Mapping[str, Any] | None
) -> None:
    """Record the decision (and the edited payload, when there is one)."""
    cur.execute(
        DECIDE, (status, _json(edited) if edited is not None else None, decided_by, item_id)
    )


def by_run(cur: Any, run_id: str, kind: str) -> Row | None:
    """The item of ``kind`` a run queued (None until it has)."""
    return fetch_one(cur, BY_RUN, (run_id, kind))


def statuses(cur: Any, item_ids: Sequence[str]) -> dict[str, str]:
    """Item id → status, for the ids that exist in this org."""
    return {str(r["id"]): r["status"] for r in fetch_all(cur, STATUSES, (list(item_ids),))}


def pending(cur: Any, *, kind: str | None = None, limit: int = 50) -> list[Row]:
    """The newest ``limit`` pending items (of ``kind``, if given), each with its kit's
    object name when it is a deployment kit."""
    return fetch_all(cur, PENDING, (kind, kind, limit))


def pending_count(cur: Any) -> int:
    return int(fetch_value(cur, PENDING_COUNT))


def kind_of(cur: Any, item_id: str) -> str | None:
    """The item's kind, without locking it (None: not in this org)."""
    row = fetch_one(cur, KIND, (item_id,))
    return None if row is None else str(row["kind"])
