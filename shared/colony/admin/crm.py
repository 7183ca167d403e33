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
- ``POST /orgs/{org}/crm/hubspot/disconnect`` → ``{"status": "disconnected", "stopped"}``;
- ``GET /orgs/{org}/crm/hubspot/stages`` → the stage mapping and the unmapped stages deals
  wait in; ``PUT`` (``CrmStageMapping``) edits it and releases the deals it maps
  (``colony.flows.crm.stages``);
- ``POST /orgs/{org}/crm/hubspot/backfill`` → 202, the backfill job (one at a time; a paused
  one resumed); ``GET`` → the org's backfill job now or last (``colony.flows.crm.backfill``);
- ``POST /crm/hubspot/webhook`` (no bearer token: HubSpot's v3 signature instead): HubSpot's
  events, kept for the org that holds their portal (``colony.flows.crm.webhook``).

The flows are ``colony.flows.crm.connections``; the OAuth client (httpx, not the HubSpot
SDK: ``colony.adapters.hubspot_oauth``) and Secret Manager are built on the first CRM call.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel

from colony.contracts.admin import CrmCallback, CrmStageMapping
from colony.errors import Unprocessable, ValidationFailed
from colony.flows.crm import backfill, connections, outgoing, stages
from colony.runtime.auth import Principal
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ID = r"[A-Za-z0-9_.:-]{1,128}"
M = TypeVar("M", bound=BaseModel)
WEBHOOK = "/crm/hubspot/webhook"
_WHAT = "connect|callback|disconnect|stages|backfill"
CRM = re.compile(rf"^/orgs/(?P<org>{_ID})/crm/hubspot(?:/(?P<what>{_WHAT}))?$")
ALLOWED = {None: ("GET",), "stages": ("GET", "PUT"), "backfill": ("GET", "POST")}


def handle(
    deps: Deps, request: JsonRequest, principal: Principal, org: str, what: str | None
) -> Any:
    """One CRM route for an authorised admin of ``org``."""
    allowed = ALLOWED.get(what, ("POST",))
    if request.method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)
    if what is None:
        return connections.status(deps, org)
    if what == "stages":
        if request.method == "GET":
            return stages.view(deps, org)
        return stages.put(deps, org, _parse(request, CrmStageMapping), principal.user_id)
    if what == "backfill":
        if request.method == "GET":
            return backfill.latest(deps, org)
        return backfill.start(deps, org, principal.user_id), 202
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
        body = _parse(request, CrmCallback)
        # connected, and what waited while it was paused is queued again
        return outgoing.complete(deps, secrets, auth, org, principal.user_id, body)
    finally:
        auth.close()


def webhook(deps: Deps, request: JsonRequest) -> Any:
    """HubSpot's webhook (``colony.flows.crm.webhook``): v3-signed batches of CRM events."""
    if request.method != "POST":
        raise MethodNotAllowed("this method is not allowed here", allow=("POST",))
    from colony.flows.crm.webhook import receive  # lazy: with the first delivery

    raw = request.raw
    # HubSpot signs the URL it called: our public URL (Cloud Run terminates TLS, so the
    # request's own URL says http://), with the path and query as received
    uri, public = raw.url, deps.settings.function_urls.get("admin")
    if public:
        query = raw.query_string.decode("latin-1")
        uri = public.rstrip("/") + raw.path + (f"?{query}" if query else "")
    return receive(
        deps,
        raw.get_data(cache=True),
        method=request.method,
        uri=uri,
        signature_v3=request.headers.get("X-HubSpot-Signature-v3"),
        timestamp=request.headers.get("X-HubSpot-Request-Timestamp"),
    )


def _parse(request: JsonRequest, model: type[M]) -> M:
    try:
        return request.parse(model)
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None
