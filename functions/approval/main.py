"""Approval callback (CONST-001): approve, reject or edit an approval item.

Authenticated by a bearer JWT carrying the org (the /overview UI) or by a signed, expiring
approval-link token; there is no unauthenticated path.
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.compose.model import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow and its auth (PyJWT, cryptography) load on the first request
    from colony.flows.approval import decide
    from colony.runtime.approvals import ApprovalRequest, authorise

    d = deps(parts)
    body = request.parse(ApprovalRequest)
    org_id, item_id, action, user = authorise(request.authorization, body, d.settings, d.clock())
    return decide(d, org_id, item_id, action, decided_by=user, edited=body.edited)
