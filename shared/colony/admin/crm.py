"""The admin API's CRM routes (issue 36; ``colony.admin.api`` authorises the caller first: a
verified token of the path's org carrying the admin role):

- ``GET /orgs/{org}/crm/hubspot`` → the connection: portal, status (``connected``,
  ``paused`` with ``paused_reason``, ``disconnected``, ``not_connected``), scopes, expiry;
- ``POST /orgs/{org}/crm/hubspot/connect`` → 201 ``{"authorize_url", "expires_at"}``: send
  the person there; HubSpot sends them back to ``COLONY_HUBSPOT_REDIRECT_URI`` with
  ``code`` and ``state``;
- ``POST /orgs/{org}/crm/hubspot/callback`` (``CrmCallback``: ``code``, ``state``) → the
  connection, connected; 403 when the state is not this org's and this person's, spent or
  expired, when HubSpot refuses the code, or (``owned_by_another_org``) when another org
  holds the portal; every refusal audited;
- ``POST /orgs/{org}/crm/hubspot/disconnect`` → ``{"status": "disconnected", "stopped"}``.

The flows are ``colony.flows.crm.connections``; the OAuth client (httpx, not the HubSpot
SDK: ``colony.adapters.hubspot_oauth``) and Secret Manager are built on the first CRM call.
"""

from __future__ import annotations

import re
from typing import Any

from colony.contracts.admin import CrmCallback
from colony.errors import Unprocessable, ValidationFailed
from colony.flows.crm import connections, outgoing
from colony.runtime.auth import Principal
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ID = r"[A-Za-z0-9_.:-]{1,128}"
CRM = re.compile(rf"^/orgs/(?P<org>{_ID})/crm/hubspot(?:/(?P<what>connect|callback|disconnect))?$")


def handle(
    deps: Deps, request: JsonRequest, principal: Principal, org: str, what: str | None
) -> Any:
    """One CRM route for an authorised admin of ``org``."""
    allowed = ("GET",) if what is None else ("POST",)
    if request.method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)
    if what is None:
        return connections.status(deps, org)
    # lazy: httpx and Secret Manager's client load with the first CRM call
    from colony.adapters.hubspot_oauth import hubspot_oauth
    from colony.runtime.notion_clients import secret_store

    auth = hubspot_oauth(deps.settings)
    try:
        if what == "connect":
            return connections.start(deps, auth, org, principal.user_id), 201
        secrets = secret_store(deps.settings)
        if what == "disconnect":
            return connections.disconnect(deps, secrets, auth, org, principal.user_id)
        try:
            body = request.parse(CrmCallback)
        except ValidationFailed as error:
            raise Unprocessable(str(error)) from None
        # connected, and what waited while it was paused is queued again
        return outgoing.complete(deps, secrets, auth, org, principal.user_id, body)
    finally:
        auth.close()
