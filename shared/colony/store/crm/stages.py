"""An org's one mapping between the CRM's pipeline stages and our deal stages
(``crm_stage_map``: made in migration 0055, made editable in 0058), edited by its admins
(``colony.flows.crm.stages``) and read both ways: the sync reads a CRM stage as ours
(``mapping``), write-back sends ours as a CRM stage (``remote_stage``) and reads back the
CRM's value a person kept (``our_stage``). Every function takes a cursor from
``Database.transaction(org_id)``: RLS scopes it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from colony.store.rows import Row, fetch_all, fetch_one

MAP = """
SELECT pipeline_id, stage_id, stage, updated_by, updated_at FROM crm_stage_map
WHERE provider = %s ORDER BY pipeline_id, stage_id
"""
PUT = """
INSERT INTO crm_stage_map (org_id, provider, pipeline_id, stage_id, stage, updated_by)
SELECT %s, %s, r.pipeline_id, r.stage_id, r.stage, %s
FROM jsonb_to_recordset(%s::jsonb) AS r(pipeline_id text, stage_id text, stage text)
ON CONFLICT (org_id, provider, pipeline_id, stage_id) DO UPDATE
SET stage = EXCLUDED.stage, updated_by = EXCLUDED.updated_by, updated_at = now()
"""
REMOVE = """
DELETE FROM crm_stage_map WHERE provider = %s AND pipeline_id = %s AND stage_id = %s
"""
# Several CRM stages may be one of ours: write-back sends the first by pipeline and stage id,
# so the answer is the same on every call until an admin edits the mapping.
REMOTE = """
SELECT pipeline_id, stage_id FROM crm_stage_map WHERE provider = %s AND stage = %s
ORDER BY pipeline_id, stage_id LIMIT 1
"""
OURS = """
SELECT stage FROM crm_stage_map WHERE provider = %s AND stage_id = %s
ORDER BY pipeline_id LIMIT 1
"""


def rows(cur: Any, provider: str) -> list[Row]:
    return fetch_all(cur, MAP, (provider,))


def mapping(cur: Any, provider: str) -> dict[tuple[str, str], str]:
    """(pipeline, stage) → our stage."""
    return {
        (str(r["pipeline_id"]), str(r["stage_id"])): str(r["stage"]) for r in rows(cur, provider)
    }


def put(
    cur: Any, org_id: str, provider: str, entries: Sequence[tuple[str, str, str]], actor: str
) -> None:
    """Set each (pipeline, stage, our stage)."""
    body = [{"pipeline_id": p, "stage_id": s, "stage": ours} for p, s, ours in entries]
    cur.execute(PUT, (org_id, provider, actor, json.dumps(body)))


def remove(cur: Any, provider: str, pipeline_id: str, stage_id: str) -> bool:
    cur.execute(REMOVE, (provider, pipeline_id, stage_id))
    return bool(cur.rowcount == 1)


def remote_stage(cur: Any, provider: str, stage: str) -> tuple[str, str] | None:
    """(pipeline id, stage id) write-back sends for our ``stage``; None: none is mapped to it."""
    row = fetch_one(cur, REMOTE, (provider, stage))
    return (str(row["pipeline_id"]), str(row["stage_id"])) if row else None


def our_stage(cur: Any, provider: str, stage_id: str) -> str | None:
    """Our stage the CRM's ``stage_id`` is mapped to (None: no mapping names it)."""
    row = fetch_one(cur, OURS, (provider, stage_id))
    return str(row["stage"]) if row else None
