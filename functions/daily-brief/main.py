"""AGT-010 daily brief: the Cloud Tasks target of the daily-brief queue (OIDC-verified in
production), one task per org from the daily schedule's fan-out (colony.flows.tenants.schedules).

The body names the org and may name the day:
``{"org_id": "...", "brief_date": "YYYY-MM-DD"?}``. Running it twice the same day returns
the stored brief.
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.compose.model import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only


@functions_framework.http
@http_json(caller=invoker_only("daily-brief"))  # Cloud Tasks, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow load on the first request
    from colony.contracts.tasks import BriefRequest
    from colony.flows.insights.brief import daily_brief

    d = deps(parts)
    body = request.parse(BriefRequest)
    return daily_brief(d, body.org_id, body.brief_date)
