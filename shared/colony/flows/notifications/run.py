"""One org's turn of the ``notify`` schedule (each minute, for the orgs with something to
do): the brief put on the calendar when its local time has come, waiting events fanned out,
and due notifications sent.

    brief due (``notify_settings.brief_next_at`` ≤ now)
        ─► a ``brief`` event for the org's local day (keyed by it: once per day, however
           many runs see it due) ─► the next delivery computed in the org's time zone
    fan_out (colony.flows.notifications.fanout) ─► deliver_due (…delivery)

The brief's instant is computed in the org's time zone by ``zoneinfo``, from the local time
its admins chose, so across a daylight-saving change it still comes at that local time (its
UTC instant moves by the hour). Runs are idempotent: a run repeated, or two at once, tell
nobody twice.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from colony.flows.deps import FlowDeps
from colony.flows.notifications.delivery import deliver_due
from colony.flows.notifications.fanout import fan_out
from colony.flows.notifications.local_time import local_day, next_at, org_time_zone
from colony.ports import Slack
from colony.store.notifications import events, org

ZoneOf = Callable[[Any], ZoneInfo]


def plan_brief(
    deps: FlowDeps, org_id: str, now: datetime, zone_of: ZoneOf = org_time_zone
) -> str | None:
    """Record the brief's event when it is due; the local day it is for (None: not due)."""
    with deps.db.transaction(org_id) as cur:
        due = org.brief_due(cur, now)
        if due is None:
            return None
        zone = zone_of(cur)
        at = due["brief_next_at"]
        day = local_day(at, zone)
        events.record(
            cur,
            org_id,
            "brief",
            day,
            f"The brief for {day}",
            "/overview#brief",
            occurred_at=at,
        )
        org.set_next_brief(cur, next_at(max(now, at), due["brief_at"], zone))
    return day


def run(
    deps: FlowDeps, slack: Slack, org_id: str, *, zone_of: ZoneOf = org_time_zone
) -> dict[str, Any]:
    """The org's turn: the brief, the fan-out, the sends; what each did."""
    now = deps.clock()
    brief = plan_brief(deps, org_id, now, zone_of)
    fanned = fan_out(deps, org_id, now)
    sent = deliver_due(deps, slack, org_id, now)
    return {"org_id": org_id, "brief": brief, "fanned": fanned, "sent": sent}
