"""Approval callback (CONST-001): a person approves, rejects or edits an approval item.

Always authenticated by the bearer JWT of the person deciding (the /overview UI), with, for a
link, the signed approval-link token that was sent to that person; there is no
unauthenticated path. A refused attempt by a signed-in person is on the org's audit log; a
link that does not verify is a recorded rejection.
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.compose.decisions import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow and its auth (cryptography's RSA) load on the first request
    from colony.errors import Forbidden, Unauthorized
    from colony.flows.approvals.approval import Actor, decide, refuse
    from colony.runtime.approvals import ApprovalRequest, authorise
    from colony.runtime.auth import verify_bearer

    d = deps(parts)
    body = request.parse(ApprovalRequest)
    try:
        who = authorise(request.authorization, body, d.settings, d.clock())
    except Unauthorized as error:
        d.rejections.record("approval", None, None, str(error))
        raise
    except Forbidden as error:
        person = verify_bearer(request.authorization, d.settings)
        refuse(d, person.org_id, person.user_id, "link", body.action or "link", error)
        raise
    actor = Actor(who.user_id, who.channel, link_nonce=who.link_nonce)
    return decide(
        d, who.org_id, who.item_id, who.action, actor=actor, edited=body.edited, reason=body.reason
    )
