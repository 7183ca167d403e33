"""Our deal stages as an org's CRM names them (``crm_stage_map``, migration 0055): what
write-back sends as ``dealstage`` and reads back when a person keeps HubSpot's value.

The inbound sync's editable mapping (issue 36 item 2) is built beside this module; until they
meet, this is the one place write-back reads an org's mapping from, so joining them changes
these two functions only. Every function takes a cursor from ``Database.transaction(org_id)``.
"""

from __future__ import annotations

from typing import Any

from colony.store.rows import fetch_all, fetch_one

SET = """
INSERT INTO crm_stage_map (org_id, provider, stage, pipeline_id, stage_id)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (org_id, provider, stage) DO UPDATE
SET pipeline_id = EXCLUDED.pipeline_id, stage_id = EXCLUDED.stage_id
"""
REMOTE = "SELECT pipeline_id, stage_id FROM crm_stage_map WHERE provider = %s AND stage = %s"
OURS = "SELECT stage FROM crm_stage_map WHERE provider = %s AND stage_id = %s ORDER BY stage"


def map_stage(
    cur: Any, org_id: str, provider: str, stage: str, pipeline_id: str, stage_id: str
) -> None:
    """Map our ``stage`` to the CRM's ``pipeline_id``/``stage_id`` (replacing a mapping)."""
    cur.execute(SET, (org_id, provider, stage, pipeline_id, stage_id))


def remote_stage(cur: Any, provider: str, stage: str) -> tuple[str, str] | None:
    """(pipeline id, stage id) our ``stage`` is in the CRM; None: the org has not mapped it."""
    row = fetch_one(cur, REMOTE, (provider, stage))
    return (str(row["pipeline_id"]), str(row["stage_id"])) if row else None


def our_stage(cur: Any, provider: str, stage_id: str) -> str | None:
    """Our stage the CRM's ``stage_id`` is mapped from (None: no mapping names it)."""
    rows = fetch_all(cur, OURS, (provider, stage_id))
    return str(rows[0]["stage"]) if rows else None
