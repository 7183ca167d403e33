"""Notion webhook: verification handshake, signed page events → Cloud Tasks re-embed jobs.

Authenticated by X-Notion-Signature (HMAC-SHA256 of the raw body).
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow loads on the first request, not at cold start
    from colony.flows.knowledge.notion_webhook import receive

    raw = request.raw.get_data(cache=True)
    return receive(deps(), raw, request.headers.get("X-Notion-Signature"))
