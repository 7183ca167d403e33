"""HubSpot webhook: v3-signed batches of CRM events → kept per org (``crm_events``) → one
drain task per org on the data-lifecycle function. See ``colony.flows.crm.webhook``."""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow loads on the first request, not at cold start
    from colony.flows.crm.webhook import receive

    d = deps()
    raw = request.raw.get_data(cache=True)
    # HubSpot signs the URL it called: our public URL (Cloud Run terminates TLS, so the
    # request's own URL says http://), with the path and query as received
    public = d.settings.function_urls.get("hubspot-webhook")
    uri = request.raw.url
    if public:
        query = request.raw.query_string.decode("latin-1")
        uri = public.rstrip("/") + request.raw.path + (f"?{query}" if query else "")
    return receive(
        d,
        raw,
        method=request.method,
        uri=uri,
        signature_v3=request.headers.get("X-HubSpot-Signature-v3"),
        timestamp=request.headers.get("X-HubSpot-Request-Timestamp"),
    )
