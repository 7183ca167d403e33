"""Notion webhook: verification handshake, signed page events → Cloud Tasks re-embed jobs.

Authenticated by X-Notion-Signature (HMAC-SHA256 of the raw body).
"""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import http_json


@functions_framework.http
@http_json
def handle(request):
    from colony.flows.notion_sync import receive

    raw = request.raw.get_data(cache=True)
    return receive(deps(), raw, request.headers.get("X-Notion-Signature"))
