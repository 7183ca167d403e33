"""Cloud Tasks target: send one approved outbox message through the mail relay (issue 18).

One task per message, named by its outbox row; the flow (``colony.flows.outbound.sending``) makes
the send a durable step, so duplicate deliveries send once. OIDC in production.
"""

from __future__ import annotations

from typing import Any

import functions_framework

from colony.runtime.compose.mail import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only


@functions_framework.http
@http_json(caller=invoker_only("send"))  # Cloud Tasks, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow, the task model and smtplib load on the first request
    from colony.contracts.tasks import SendMessage
    from colony.flows.outbound.sending import send

    task = request.parse(SendMessage)
    return send(deps(parts), task.org_id, task.outbox_id)
