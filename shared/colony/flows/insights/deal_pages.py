"""Deals as records (issue 34 item 1): the org's deals by stage, and a deal's page with its
contact, its calls and what was recommended about it (AGT-006's updates with their field
changes, KC candidates and the follow-up from its calls), each with its decision.

Reading only here: a change to a deal is a person's decision on its update card (or, with the
team's CRM, written back there: issue 36)."""

from __future__ import annotations

from typing import Any

from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.insights.prospects import plain
from colony.store.insights import deal_pages as repo

STAGES = ("discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost")


def by_stage(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """Every deal of the org under its stage (pipeline order, then any other stage), with the
    stage's count and value; ``truncated`` when there were more than ``MAX_DEALS``."""
    with deps.db.transaction(org_id) as cur:
        rows = repo.by_stage(cur)
    truncated = len(rows) > repo.MAX_DEALS
    grouped: dict[str, list[Any]] = {}
    for row in rows[: repo.MAX_DEALS]:
        grouped.setdefault(row["stage"], []).append(row)
    order = [*STAGES, *sorted(set(grouped) - set(STAGES))]
    return plain(
        {
            "stages": [
                {
                    "stage": stage,
                    "count": len(grouped.get(stage, [])),
                    "value": float(sum(d["value"] or 0 for d in grouped.get(stage, []))),
                    "deals": grouped.get(stage, []),
                }
                for stage in order
            ],
            "truncated": truncated,
        }
    )


def deal(deps: FlowDeps, org_id: str, deal_id: str) -> dict[str, Any]:
    """One deal's page; another org's deal is not found."""
    if not deal_id or len(deal_id) > 200:
        raise ValidationFailed("a deal id is 1 to 200 characters")
    with deps.db.transaction(org_id) as cur:
        found = repo.deal(cur, deal_id)
    if found is None:
        raise NotFound(f"there is no deal {deal_id!r}")
    return plain(found)
