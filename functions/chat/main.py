"""AGT-001 GTM Orchestrator chat: streamed turns (SSE), session event replay, the /overview
page, and inline approval decisions. Authenticated by a bearer JWT carrying the org."""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.compose.model_assets import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json(methods=("GET", "POST"), paths=None)
def handle(request: JsonRequest) -> Any:  # a JSON value, a status pair or an SSE stream
    # lazy: the routes and the chat flow load on the first request, not at cold start
    from colony.chat.api import handle as route

    return route(deps(parts), request)
