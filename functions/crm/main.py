"""Cloud Tasks target of everything Colony does with an org's CRM (issue 36; OIDC in
production). One function both ways because it is the only bundle carrying the HubSpot SDK.

Body: ``{"task": {"kind": ..., ...}}`` (``colony.contracts.crm_tasks.CrmTaskBody``):
- ``crm.push`` (``org_id``, ``push_id``): one approved deal update written back, or one
  engagement logged, in the org's HubSpot with the org's own token
  (``colony.flows.crm.outgoing.run``); what became of it is the push's row;
- ``crm.read`` (``org_id``, ``item_id``): the HubSpot deal a pending deal update's card shows
  beside ours (``colony.flows.crm.deal_writes.read_card``);
- ``crm.backfill`` (``org_id``, ``job_id``): the org's backfill run from its cursor; it queues
  its own continuation (``colony.flows.crm.backfill.run_job``);
- ``crm.events`` (``org_id``): the events HubSpot's webhook kept, applied, each record read
  back (``colony.flows.crm.events.drain``). The webhook itself is served by the admin function
  (``POST /crm/hubspot/webhook``): a task target may not be public;
- ``crm.reconcile`` (``org_id``): the daily search for what the webhooks missed
  (``colony.flows.crm.reconcile.run``).
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only


@functions_framework.http
@http_json(caller=invoker_only("crm"))  # Cloud Tasks / Scheduler, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the task models, the flows and the HubSpot SDK load on the first request
    from colony.contracts.crm_tasks import (
        CrmBackfillTask,
        CrmCardRead,
        CrmEventsTask,
        CrmPush,
        CrmTaskBody,
    )

    d = deps()
    task = request.parse(CrmTaskBody).task
    if isinstance(task, CrmPush | CrmCardRead):
        # lazy: write-back's flows and the SDK, with the first push or card read
        from colony.flows.crm import deal_writes, outgoing
        from colony.runtime.crm_clients import crm_parts

        if isinstance(task, CrmPush):
            return outgoing.run(d, crm_parts(d), task.org_id, task.push_id)
        return deal_writes.read_card(d, crm_parts(d), task.org_id, task.item_id)
    # lazy: the sync's flows and the SDK, with the first backfill, drain or reconciliation
    from colony.flows.crm import backfill, events, reconcile
    from colony.runtime.crm_clients import hubspot_access

    access = hubspot_access(d)  # write-back's too: one count per portal
    if isinstance(task, CrmBackfillTask):
        return backfill.run_job(d, access, task.org_id, task.job_id)
    if isinstance(task, CrmEventsTask):
        return events.drain(d, access, task.org_id)
    return reconcile.run(d, access, task.org_id)
