"""Deal updates (ENT-003) through the approval queue (CONST-001; SPEC §6.5).

A ``deal_update`` item carries ``{"deal_id", "changes": {stage?, value?, next_action?,
close_date?}, "source": {...}}`` (AGT-006's CRM recommendations, or a person). Applying it
updates the deal; a deal that becomes ``closed_won`` publishes ``deal.closed_won`` for AGT-009
(the onboarding kit). The publish happens inside the decision's transaction: if it fails,
nothing is applied; if the transaction fails after it, the onboarding flow finds the deal
not closed and retries until the platform gives up. Delivery is at least once, so the
onboarding flow is idempotent per deal.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from colony.contracts.common import Strict
from colony.contracts.events import DealClosedWon
from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.registry.functions import ONBOARDING_TOPIC
from colony.runtime.transport import publish
from colony.store import approvals
from colony.store import deals as deal_store

Stage = Literal["discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost"]


class DealChanges(Strict):
    stage: Stage | None = None
    value: Decimal | None = Field(default=None, ge=0, max_digits=14, decimal_places=2)
    next_action: str | None = Field(default=None, min_length=1, max_length=2000)
    close_date: date | None = None


class DealUpdate(BaseModel):
    """The payload; other top-level keys (a rationale, say) are kept but not applied."""

    model_config = ConfigDict(extra="allow", frozen=True)

    deal_id: str = Field(min_length=1, max_length=200)
    changes: DealChanges
    source: dict[str, Any] = Field(default_factory=dict)


def parse_update(payload: Mapping[str, Any]) -> DealUpdate:
    try:
        update = DealUpdate.model_validate(dict(payload))
    except ValidationError as error:
        fields = ", ".join(
            ".".join(map(str, e["loc"])) for e in error.errors(include_input=False)[:3]
        )
        raise ValidationFailed(f"the deal update is invalid at: {fields}") from None
    if not update.changes.model_dump(exclude_none=True):
        raise ValidationFailed("the deal update changes nothing")
    return update


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
        return approvals.add(cur, org_id, "deal_update", source_agent, payload, subject_id=deal_id)


def apply_deal_update(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """Approved deal update → the deal row; closed-won → the onboarding event."""
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
    if c.stage == "closed_won" and deal["stage"] != "closed_won":
        event = DealClosedWon(org_id=org_id, deal_id=update.deal_id)
        publish(deps.transport, ONBOARDING_TOPIC, event)
