"""The admin API's team routes (issue 35; ``colony.admin.api`` authorises the caller first: a
verified token of the path's org carrying the admin role):

- ``GET``/``PUT /orgs/{org}/team``: the team settings (``contracts.team.TeamSettings``: time
  zone, brief time, named backup, escalation window, assignment rules); a time zone that does
  not exist, or a person who is not an active member of the org, is a 422 naming it;
- ``GET /orgs/{org}/members``: the org's people (active and left);
- ``POST /orgs/{org}/members/sync`` → the org's people as Clerk's Backend API lists them
  now (joins, changes, leavers handed over);
- ``POST /orgs/{org}/owners`` (``contracts.team.Reassign``) → one prospect or deal given to
  an active person of the org (audited; anyone else, another org's user included, a 422);
- ``POST /orgs/{org}/owners/assign`` → every prospect and deal without an owner assigned by
  the org's rules (audited).

The flows are ``colony.flows.tenants.team``, ``.owners`` and ``.clerk_members``; the Clerk
client (httpx) is built on the first resync.
"""

from __future__ import annotations

import re
from typing import Any

from colony.contracts.team import Reassign, TeamSettings
from colony.errors import Unprocessable, ValidationFailed
from colony.flows.tenants import clerk_members, owners, team
from colony.runtime.auth import Principal
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ID = r"[A-Za-z0-9_.:-]{1,128}"
TEAM = re.compile(
    rf"^/orgs/(?P<org>{_ID})/(?P<what>team|members|members/sync|owners|owners/assign)$"
)
METHODS = {
    "team": ("GET", "PUT"),
    "members": ("GET",),
    "members/sync": ("POST",),
    "owners": ("POST",),
    "owners/assign": ("POST",),
}


def handle(deps: Deps, request: JsonRequest, principal: Principal, org: str, what: str) -> Any:
    """One team route for an authorised admin of ``org``."""
    if request.method not in METHODS[what]:
        raise MethodNotAllowed("this method is not allowed here", allow=METHODS[what])
    actor = principal.user_id
    if what == "team":
        if request.method == "GET":
            return team.read(deps, org)
        return team.replace(deps, org, _body(request, TeamSettings))
    if what == "members":
        return team.people(deps, org)
    if what == "members/sync":
        return _resync(deps, org, actor)
    if what == "owners":
        body = _body(request, Reassign)
        return owners.reassign(deps, org, body.subject, body.id, body.owner, actor)
    return owners.assign_unowned(deps, org, actor)


def _body(request: JsonRequest, model: Any) -> Any:
    try:
        return request.parse(model)
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None


def _resync(deps: Deps, org: str, actor: str) -> dict[str, Any]:
    from colony.adapters.clerk_backend import clerk_backend_from_settings  # lazy: httpx

    directory = clerk_backend_from_settings(deps.settings)
    try:
        return clerk_members.resync(deps, directory, org, actor)
    finally:
        directory.close()
