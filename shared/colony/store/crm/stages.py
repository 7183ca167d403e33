"""An org's mapping from CRM pipeline stages to our deal stages (``crm_stage_map``, migration
0055), edited by its admins. Every function takes a cursor from
``Database.transaction(org_id)``: RLS scopes it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from colony.store.rows import Row, fetch_all

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
