"""Cloud Tasks target for AGT-002 (OIDC in production): resume a campaign run the circuit
breaker paused, hand a sequence's next step to AGT-005 once its delay has passed, put an
event the model provider rate-limited back on its topic (``colony.runtime.redelivery``), or
publish again the campaign work an org's spent budget held, once it allows
(``colony.flows.tenants.budget``)."""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only


@functions_framework.http
@http_json(caller=invoker_only("campaign-resume"))  # Cloud Tasks / Scheduler, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flows and their task models load on the first request
    from colony.contracts.events import CampaignResume, SequenceStep
    from colony.contracts.tasks import BudgetRelease, Redeliver
    from colony.flows.campaigns import campaign
    from colony.flows.outbound import sequences
    from colony.flows.tenants import budget
    from colony.runtime.redelivery import redeliver

    d = deps()
    kind = request.body.get("kind") if isinstance(request.body, dict) else None
    if kind == "sequence.step":
        return sequences.due(d, request.parse(SequenceStep))
    if kind == "redeliver":
        return redeliver(d.transport, request.parse(Redeliver))
    if kind == "budget.release":
        return budget.release(d, request.parse(BudgetRelease))
    event = request.parse(CampaignResume)
    task = request.headers.get("X-CloudTasks-TaskName") or f"manual-{event.campaign_id}"
    return campaign.resume(d, event, task)
