"""ESP delivery events (delivered / bounced / complained / replied), HMAC-signed; feeds the
circuit breaker (CONST-005)."""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow and the event model load on the first request, not at cold start
    from colony.flows.delivery import record
    from colony.runtime.approvals import DeliveryEvent, verify_delivery_signature

    d = deps()
    verify_delivery_signature(request.raw.get_data(), request.headers, d.settings)
    event = request.parse(DeliveryEvent)
    return record(d, event.org_id, event.outbox_id, event.event, event.event_id)
