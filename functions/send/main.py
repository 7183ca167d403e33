"""Cloud Tasks target: send one approved outbox message through the mail relay (issue 18),
or run one org's notifications (issue 35: ``notify.run``, the ``notify`` schedule's task).

One task per message, named by its outbox row; the flow (``colony.flows.outbound.sending``) makes
the send a durable step, so duplicate deliveries send once. A notify run fans out and sends
the org's due notifications (``colony.flows.notifications.run``), each claimed and sent once,
by mail through the same sender or in Slack (built on the first run). OIDC in production.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.compose.mail import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only

if TYPE_CHECKING:
    from colony.adapters.slack import SlackAdapter

_slack: SlackAdapter | None = None


@functions_framework.http
@http_json(caller=invoker_only("send"))  # Cloud Tasks, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the flow, the task model and smtplib load on the first request
    from colony.contracts.tasks import SendMessage

    if isinstance(request.body, dict) and request.body.get("kind") == "notify.run":
        return _notify(request)
    from colony.flows.outbound.sending import send  # lazy: (as above)

    task = request.parse(SendMessage)
    return send(deps(parts), task.org_id, task.outbox_id)


def _notify(request: JsonRequest) -> dict[str, Any]:
    # lazy: the notifications flow and slack_sdk load with the first notify run
    from colony.adapters.slack import SlackAdapter
    from colony.contracts.tasks import NotifyRun
    from colony.flows.notifications.run import run

    global _slack
    task = request.parse(NotifyRun)
    d = deps(parts)
    if _slack is None:
        _slack = SlackAdapter(d.settings.slack_api_url)
    return run(d, _slack, task.org_id)
