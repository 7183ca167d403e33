"""The admin API's notification settings of an org: its Slack workspace and bot token, and
the local time its brief goes out at (``colony.flows.notifications.settings``).

- ``PUT /orgs/{org}/notifications/slack`` (``SlackConnect``: ``team_id``, ``bot_token``):
  connect Slack: the token must be of that workspace (Slack's ``auth.test``; else 403
  ``ownership_unproven``) and the workspace no other org's (else 403
  ``owned_by_another_org``), both on the audit log; the token goes to the secret store;
  un-pauses Slack after a revoked token;
- ``PUT /orgs/{org}/notifications/brief`` (``BriefTime``: ``brief_at``, ``HH:MM`` local).
"""

from __future__ import annotations

import re
from typing import Any

from colony.contracts.notifications import BriefTime, SlackConnect
from colony.errors import Unprocessable, ValidationFailed
from colony.flows.notifications import settings
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

NOTIFICATIONS = re.compile(
    r"^/orgs/(?P<org>[A-Za-z0-9_.:-]{1,128})/notifications/(?P<what>slack|brief)$"
)


def handle(deps: Deps, request: JsonRequest, org: str, what: str, actor: str) -> dict[str, Any]:
    """One route, for an admin of ``org`` (the caller checked)."""
    if request.method != "PUT":
        raise MethodNotAllowed("this method is not allowed here", allow=("PUT",))
    try:
        if what == "brief":
            return settings.set_brief_time(deps, org, request.parse(BriefTime))
        body = request.parse(SlackConnect)
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None
    # lazy: Secret Manager's client and slack_sdk load with the first connect
    from colony.adapters.slack import SlackAdapter
    from colony.runtime.org_secrets import secret_store

    slack = SlackAdapter(deps.settings.slack_api_url)
    return settings.connect_slack(deps, secret_store(deps.settings), slack, org, body, actor)
