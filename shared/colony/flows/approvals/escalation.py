"""Escalation (issue 35 item 2): an item left undecided past the org's window goes to its
named backup.

    the approval-escalation schedule (every 15 minutes; audience: orgs with an item routed
    longer ago than their ``escalate_after_hours``, and an active backup) ─► one task per org
    ─► escalate: each such item's queue becomes the backup's (``escalated_from`` keeps whose
    it was), one 'assignment' audit entry per item, in the same transaction

An item is escalated once: after that it waits with the backup (who may hand it back by
deciding it, as anyone with the role may). An org with no backup, no window, or a backup who
has left escalates nothing, and says why.
"""

from __future__ import annotations

from typing import Any

from colony.flows.deps import FlowDeps
from colony.store.approvals import audit, routing
from colony.store.tenants import members, team

ACTOR = "system:escalation"


def escalate(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """Escalate the org's overdue items to its backup; what moved."""
    with deps.db.transaction(org_id) as cur:
        settings = team.get(cur)
        backup, hours = settings["backup_user_id"], settings["escalate_after_hours"]
        if backup is None or hours is None:
            return {"status": "skipped", "reason": "the org names no backup or no window"}
        person = members.get(cur, backup)
        if person is None or not person.active:
            return {"status": "skipped", "reason": f"the backup {backup!r} has left the org"}
        moved = routing.escalate(cur, backup, hours)
        for row in moved:
            detail = {"from": row["escalated_from"], "to": backup, "after_hours": hours}
            entry = audit.Entry(
                "assignment",
                ACTOR,
                "system",
                "escalate",
                approval_item_id=str(row["id"]),
                item_kind=str(row["kind"]),
                detail=detail,
            )
            audit.append(cur, org_id, entry)
    return {"status": "escalated", "to": backup, "items": [str(r["id"]) for r in moved]}
