"""What the crm-sync function is asked to do by Cloud Tasks (``CrmTaskBody``): an org's
HubSpot backfill run from its cursor, its webhook events applied, its daily reconciliation
(``colony.flows.crm``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from colony.contracts.common import Strict


class CrmBackfillTask(Strict):
    """Run (or resume, from its cursor) one org's HubSpot backfill job for a while."""

    kind: Literal["crm.backfill"] = "crm.backfill"
    org_id: str = Field(min_length=1, max_length=200)
    job_id: str = Field(min_length=1, max_length=200)


class CrmEventsTask(Strict):
    """Apply one org's HubSpot webhook events that the webhook kept (``crm_events``)."""

    kind: Literal["crm.events"] = "crm.events"
    org_id: str = Field(min_length=1, max_length=200)


class CrmReconcile(Strict):
    """One org's share of the ``crm-reconcile`` schedule."""

    kind: Literal["crm.reconcile"] = "crm.reconcile"
    org_id: str = Field(min_length=1, max_length=200)


CrmTask = Annotated[CrmBackfillTask | CrmEventsTask | CrmReconcile, Field(discriminator="kind")]


class CrmTaskBody(Strict):
    """The crm-sync function's task body: ``{"task": {"kind": ...}}``."""

    task: CrmTask
