"""AGT-001 GTM Orchestrator chat: streamed turns (SSE), session event replay, the /overview
page, and inline approval decisions. Authenticated by a bearer JWT carrying the org.

The routes are imported here, at instance start, not on the first request: this function
serves the page people open first thing (/overview, then /approvals), and functions-framework
imports ``main`` before its server listens, so the import (about 0.7 s of the first load's
1.07 s, issue 20) is paid before the instance takes traffic instead of by the first person
to open the page. Importing it needs no database or settings: those are still built by
``deps()`` on the first request. What the page and its views never use loads with its own
first use, later: a turn (the model stack), a decision (each kind's edit rules).
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.chat.api import handle as route
from colony.runtime.compose.decisions_assets import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json(methods=("GET", "POST", "PUT", "DELETE"), paths=None, forms=("/slack/interactions",))
def handle(request: JsonRequest) -> Any:  # a JSON value, a status pair or an SSE stream
    return route(deps(parts), request)
