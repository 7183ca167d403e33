"""Clerk webhook: signed ``organization.*`` events → the org's row and defaults, or its
erasure; ``organizationMembership.*`` → the org's people (a leaver's work handed on).
Authenticated by Svix's signature headers. See ``colony.flows.tenants.clerk_orgs``."""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow and the verifier load on the first request, not at cold start
    from colony.flows.tenants.clerk_orgs import receive

    d = deps()
    return receive(d, d.rejections, request.raw.get_data(cache=True), request.headers)
