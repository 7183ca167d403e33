"""Cloud Tasks target: resume a campaign run the circuit breaker paused (OIDC in production)."""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow, its task model and OIDC (PyJWT) load on the first request
    from colony.contracts.events import CampaignResume
    from colony.flows import campaign
    from colony.runtime.auth import verify_google_oidc

    d = deps()
    verify_google_oidc(
        request.authorization, d.settings.function_urls.get("campaign-resume", ""), d.settings
    )
    event = request.parse(CampaignResume)
    task = request.headers.get("X-CloudTasks-TaskName") or f"manual-{event.campaign_id}"
    return campaign.resume(d, event, task)
