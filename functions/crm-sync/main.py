"""The Cloud Tasks target of an org's HubSpot sync (OIDC in production; ``colony.flows.crm``).

Body (``colony.contracts.crm_tasks.CrmTaskBody``): ``crm.backfill`` (``org_id``, ``job_id``:
run the backfill from its cursor; it queues its own continuation), ``crm.events``
(``org_id``: apply the events HubSpot's webhook kept, each record read back), and
``crm.reconcile`` (``org_id``: the daily search for what the webhooks missed). HubSpot's
webhook itself is served by the admin function (``POST /crm/hubspot/webhook``), which keeps
the events and queues the ``crm.events`` task here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only

if TYPE_CHECKING:
    from colony.runtime.crm_access import HubSpotAccess

_hubspot: HubSpotAccess | None = None


@functions_framework.http
@http_json(caller=invoker_only("crm-sync"))  # Cloud Tasks / Scheduler, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the task model, the flows and the HubSpot SDK load on the first task
    from colony.contracts.crm_tasks import CrmBackfillTask, CrmEventsTask, CrmTaskBody
    from colony.flows.crm import backfill, events, reconcile
    from colony.runtime.crm_access import HubSpotAccess

    global _hubspot
    d = deps()
    task = request.parse(CrmTaskBody).task
    if _hubspot is None:
        _hubspot = HubSpotAccess(d)
    if isinstance(task, CrmBackfillTask):
        return backfill.run_job(d, _hubspot, task.org_id, task.job_id)
    if isinstance(task, CrmEventsTask):
        return events.drain(d, _hubspot, task.org_id)
    return reconcile.run(d, _hubspot, task.org_id)
