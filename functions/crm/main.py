"""Cloud Tasks target: what Colony writes to an org's CRM (issue 36; OIDC in production).

Body: ``{"task": {"kind": ..., ...}}`` (``colony.contracts.tasks.CrmTaskBody``):
- ``crm.push`` (``org_id``, ``push_id``): one approved deal update written back, or one
  engagement logged, in the org's HubSpot with the org's own token
  (``colony.flows.crm.outgoing.run``); what became of it is the push's row;
- ``crm.read`` (``org_id``, ``item_id``): the HubSpot deal a pending deal update's card shows
  beside ours (``colony.flows.crm.deal_writes.read_card``).

A function of its own because it carries the HubSpot SDK (``hubspot-api-client``, about
50 MB installed): no other bundle does (docs/crm.md, "Bundles").
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only


@functions_framework.http
@http_json(caller=invoker_only("crm"))  # Cloud Tasks, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the task models, the flows and the HubSpot SDK load on the first request
    from colony.contracts.tasks import CrmPush, CrmTaskBody
    from colony.flows.crm import deal_writes, outgoing
    from colony.runtime.crm_clients import crm_parts

    d = deps()
    task = request.parse(CrmTaskBody).task
    if isinstance(task, CrmPush):
        return outgoing.run(d, crm_parts(d), task.org_id, task.push_id)
    return deal_writes.read_card(d, crm_parts(d), task.org_id, task.item_id)
