"""The org admin API (public: it verifies the bearer token and the admin role itself):
erasure requests and their reports, retention periods, org data and imports (whose upload
URLs it signs on the assets bucket). See ``colony.admin.api``."""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.compose.assets import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json(methods=("GET", "POST", "PUT"), paths=None)
def handle(request: JsonRequest) -> Any:
    # lazy: the API, its flows and JWT verification load on the first request
    from colony.admin.api import handle as admin

    return admin(deps(parts), request)
