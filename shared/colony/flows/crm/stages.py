"""An org's editable mapping from HubSpot pipeline stages to our deal stages, and the deals
that wait for one.

A deal synced in a stage with no mapping is never dropped: its link keeps what was read and
names the ``pipeline/stage`` (``colony.flows.crm.apply``), and ``view`` lists each such stage
with how many deals wait in it, for an admin to map. ``put`` stores the admin's edits (on
the audit log) and, in the same transaction, releases the deals held in a stage it maps:
they become ours with the stage just chosen. Removing a mapping leaves the deals already
synced as they are; later reads of a deal in that stage hold it again.
"""

from __future__ import annotations

from typing import Any

from colony.contracts.admin import CrmStageMapping
from colony.errors import NotFound
from colony.flows.crm.apply import PROVIDER, apply
from colony.flows.deps import FlowDeps
from colony.ports import CrmRecord
from colony.store import orgdata
from colony.store.approvals import audit
from colony.store.crm import records, stages

OUR_STAGES = ("discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost")


def view(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The mapping, and each unmapped stage deals wait in (``pipeline_id``, ``stage_id``,
    ``deals``)."""
    with deps.db.transaction(org_id) as cur:
        mapped = stages.rows(cur, PROVIDER)
        waiting = records.unmapped(cur, PROVIDER)
    return {
        "provider": PROVIDER,
        "our_stages": list(OUR_STAGES),
        "stages": [
            {
                "pipeline_id": r["pipeline_id"],
                "stage_id": r["stage_id"],
                "stage": r["stage"],
                "updated_by": r["updated_by"],
                "updated_at": r["updated_at"].isoformat(),
            }
            for r in mapped
        ],
        "unmapped": [
            {
                "pipeline_id": str(r["unmapped_stage"]).split("/", 1)[0],
                "stage_id": str(r["unmapped_stage"]).split("/", 1)[1],
                "deals": int(r["deals"]),
            }
            for r in waiting
        ],
    }


def put(deps: FlowDeps, org_id: str, edit: CrmStageMapping, actor: str) -> dict[str, Any]:
    """Apply an admin's edit; the deals it released are counted in ``released``."""
    chosen = [(e.pipeline_id, e.stage_id, e.stage) for e in edit.stages if e.stage is not None]
    removed = [(e.pipeline_id, e.stage_id) for e in edit.stages if e.stage is None]
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        for pipeline_id, stage_id in removed:
            stages.remove(cur, PROVIDER, pipeline_id, stage_id)
        stages.put(cur, org_id, PROVIDER, chosen, actor)
        released = _release(cur, org_id, [f"{p}/{s}" for p, s, _ in chosen])
        audit.append(
            cur,
            org_id,
            audit.Entry(
                event="effect",
                actor=actor,
                channel="admin",
                action="crm.stages",
                reason=None,
                detail={"mapped": len(chosen), "removed": len(removed), "released": released},
            ),
        )
    return {**view(deps, org_id), "released": released}


def _release(cur: Any, org_id: str, keys: list[str]) -> int:
    """The held deals of ``keys``, applied with the mapping as it now is."""
    held = records.held_deals(cur, PROVIDER, keys) if keys else []
    if not held:
        return 0
    deals, associated = [], {}
    for row in held:
        properties = dict(row["properties"] or {})
        associated[str(row["remote_id"])] = [str(i) for i in properties.pop("_contacts", [])]
        stamp = row["remote_updated_at"]
        updated = stamp.isoformat() if stamp is not None else ""
        deals.append(CrmRecord("deals", str(row["remote_id"]), properties, updated))
    mapping = stages.mapping(cur, PROVIDER)
    outcome = apply(cur, org_id, "deals", deals, associated, mapping, force=True)
    return outcome.created + outcome.updated
