"""What the crm function is asked to do by Cloud Tasks (``CrmTaskBody``), both ways of issue 36:
out, a push written to an org's CRM and the deal a card shows read from it; in, an org's
HubSpot backfill run from its cursor, its webhook events applied, its daily reconciliation
(``colony.flows.crm``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from colony.contracts.common import ID, Strict


class CrmPush(Strict):
    """Write one push to the org's CRM: an approved deal update, or an engagement
    (``colony.flows.crm.outgoing.run``)."""

    kind: Literal["crm.push"] = "crm.push"
    org_id: str = ID
    push_id: str = ID


class CrmCardRead(Strict):
    """Read the HubSpot deal a pending deal update's card shows beside ours
    (``colony.flows.crm.deal_writes.read_card``)."""

    kind: Literal["crm.read"] = "crm.read"
    org_id: str = ID
    item_id: str = ID


class CrmBackfillTask(Strict):
    """Run (or resume, from its cursor) one org's HubSpot backfill job for a while."""

    kind: Literal["crm.backfill"] = "crm.backfill"
    org_id: str = ID
    job_id: str = ID


class CrmEventsTask(Strict):
    """Apply one org's HubSpot webhook events that the webhook kept (``crm_events``)."""

    kind: Literal["crm.events"] = "crm.events"
    org_id: str = ID


class CrmReconcile(Strict):
    """One org's share of the ``crm-reconcile`` schedule."""

    kind: Literal["crm.reconcile"] = "crm.reconcile"
    org_id: str = ID


CrmTask = Annotated[
    CrmPush | CrmCardRead | CrmBackfillTask | CrmEventsTask | CrmReconcile,
    Field(discriminator="kind"),
]


class CrmTaskBody(Strict):
    """The crm function's one body shape: ``{"task": {"kind": ...}}``."""

    task: CrmTask
