"""An org's team settings (issue 35): its time zone, the local time its brief is written, its
named backup, how long an item may wait before it escalates, and the assignment rules.

Read and replaced by its admins (admin API, CLI) with the body parsed into
``contracts.team.TeamSettings``; the caller has checked who may. Everything is checked before
anything is kept: a time zone that is not an IANA name (or that the database does not know),
a backup or a rule's member who is not an active person of the org, or a rule that cannot
work is a 422 naming it.
"""

from __future__ import annotations

from typing import Any

from colony.contracts.team import TeamSettings
from colony.errors import NotFound, Unprocessable, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.policy import assignment
from colony.policy.local_day import valid_zone
from colony.store import orgdata
from colony.store.tenants import members
from colony.store.tenants import team as store

__all__ = ["people", "read", "replace", "valid_zone"]


def people(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The org's people (active, then those who left), as an admin reads them."""
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        rows = members.everyone(cur)
    return {
        "members": [
            {
                "user_id": m.user_id,
                "role": m.role,
                "name": m.name,
                "email": m.email,
                "status": m.status,
                "joined_at": m.joined_at.isoformat(),
                "left_at": m.left_at.isoformat() if m.left_at else None,
            }
            for m in rows
        ]
    }


def read(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The org's team settings as an admin reads them (the defaults where none were set)."""
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        row = store.get(cur)
    return _shown(row)


def replace(deps: FlowDeps, org_id: str, body: TeamSettings) -> dict[str, Any]:
    try:
        zone = valid_zone(body.time_zone)
        assignment.parse(body.assignment)
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        if not store.zone_known(cur, zone):
            raise Unprocessable(f"time_zone: {zone!r} is not a time zone the database knows")
        active = {m.user_id for m in members.active(cur)}
        named = [("backup_user_id", body.backup_user_id)] if body.backup_user_id else []
        for i, rule in enumerate(body.assignment.get("rules", [])):
            named += [(f"assignment.rules[{i}].members", m) for m in rule["members"]]
        for field, user in named:
            if user not in active:
                raise Unprocessable(f"{field}: {user!r} is not an active person of this org")
        if body.escalate_after_hours is not None and body.backup_user_id is None:
            raise Unprocessable("escalate_after_hours: escalation needs a backup_user_id")
        store.replace(
            cur,
            org_id,
            time_zone=zone,
            brief_time=body.brief_time,
            backup_user_id=body.backup_user_id,
            escalate_after_hours=body.escalate_after_hours,
            assignment=body.assignment,
        )
        row = store.get(cur)
    return _shown(row)


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "time_zone": row["time_zone"],
        "brief_time": row["brief_time"].strftime("%H:%M"),
        "backup_user_id": row["backup_user_id"],
        "escalate_after_hours": row["escalate_after_hours"],
        "assignment": row["assignment"],
    }
