"""Deal updates (ENT-003) through the approval queue (CONST-001; SPEC §6.5).

A ``deal_update`` item carries ``{"deal_id", "changes": {stage?, value?, next_action?,
close_date?}, "source": {...}}`` (AGT-006's CRM recommendations, or a person). Applying it
updates the deal; a deal that becomes ``closed_won`` publishes ``deal.closed_won`` for AGT-009
(the onboarding kit). The publish happens inside the decision's transaction: if it fails,
nothing is applied; if the transaction fails after it, the onboarding flow finds the deal
not closed and retries until the platform gives up. Delivery is at least once, so the
onboarding flow is idempotent per deal.

A deal linked to the org's HubSpot is written back there after the decision commits
(``colony.flows.crm.deal_writes``): the card keeps what it read of the HubSpot deal when it
was queued, so a change made in HubSpot meanwhile is put to a person, not overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.contracts.deals import parse_update
from colony.contracts.events import DealClosedWon
from colony.errors import NotFound
from colony.flows.crm import deal_writes
from colony.flows.deps import FlowDeps
from colony.registry.functions import ONBOARDING_TOPIC
from colony.runtime.transport import publish
from colony.store.approvals import approvals
from colony.store.deals import deals as deal_store


def propose_deal_update(
    deps: FlowDeps,
    org_id: str,
    deal_id: str,
    changes: Mapping[str, Any],
    *,
    source: Mapping[str, Any] | None = None,
    source_agent: str = "AGT-006",
) -> str:
    """Queue a ``deal_update`` approval item; returns its id."""
    update = parse_update({"deal_id": deal_id, "changes": dict(changes), "source": source or {}})
    payload = update.model_dump(mode="json", exclude_none=True)
    with deps.db.transaction(org_id) as cur:
        if not deal_store.exists(cur, deal_id):
            raise NotFound(f"deal {deal_id!r} does not exist in this org")
        item_id = approvals.add(
            cur, org_id, "deal_update", source_agent, payload, subject_id=deal_id
        )
        deal_writes.read_later(deps, cur, org_id, item_id, deal_id)
        return item_id


def apply_deal_update(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """Approved deal update → the deal row (and, after the commit, the linked HubSpot deal);
    closed-won → the onboarding event."""
    update = parse_update(payload)
    deal = deal_store.lock_stage(cur, update.deal_id)
    if deal is None:
        raise NotFound(f"deal {update.deal_id!r} does not exist in this org")
    c = update.changes
    deal_store.update(
        cur,
        update.deal_id,
        stage=c.stage,
        value=c.value,
        next_action=c.next_action,
        close_date=c.close_date,
    )
    deal_writes.write_later(deps, cur, org_id, item_id)
    if c.stage == "closed_won" and deal["stage"] != "closed_won":
        event = DealClosedWon(org_id=org_id, deal_id=update.deal_id)
        publish(deps.transport, ONBOARDING_TOPIC, event)
