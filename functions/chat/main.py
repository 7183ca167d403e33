"""AGT-001 GTM Orchestrator chat: streamed turns (SSE), session event replay, the /overview
page, and inline approval decisions. Authenticated by a bearer JWT carrying the org."""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import http_json


@functions_framework.http
@http_json(methods=("GET", "POST"), paths=None)
def handle(request):
    from colony.chat.api import handle as route

    return route(deps(), request)
