"""Cloud Tasks target: resume a campaign run the circuit breaker paused (OIDC in production)."""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only


@functions_framework.http
@http_json(caller=invoker_only("campaign-resume"))  # Cloud Tasks / Scheduler, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow and its task model load on the first request
    from colony.contracts.events import CampaignResume
    from colony.flows import campaign

    d = deps()
    event = request.parse(CampaignResume)
    task = request.headers.get("X-CloudTasks-TaskName") or f"manual-{event.campaign_id}"
    return campaign.resume(d, event, task)
