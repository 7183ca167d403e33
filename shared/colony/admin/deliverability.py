"""The admin API's deliverability routes (``colony.admin.api`` authorises the caller first:
an admin of the org):

- ``GET``/``PUT /orgs/{org}/postal-address`` (``PostalAddressSet``): the postal address every
  message's footer prints; an org without one cannot send campaign email. 422 naming what
  is wrong with one that does not read as an address; audited.
- ``POST /orgs/{org}/sending/resume`` (``SendingResume``: ``{"kind", "target"}``): resume a
  campaign, a mailbox or a domain the circuit breaker paused; audited. 404 for a campaign
  not in the org, 409 ``not_paused`` for what is not paused.

The rules are ``flows.outbound.postal_address`` and ``flows.outbound.breaker``.
"""

from __future__ import annotations

import re
from typing import Any

from colony.contracts.deliverability import PostalAddressSet, SendingResume
from colony.errors import NotFound, Unprocessable, ValidationFailed
from colony.flows.outbound import breaker, postal_address
from colony.runtime.auth import Principal
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ID = r"[A-Za-z0-9_.:-]{1,128}"
DELIVERABILITY = re.compile(rf"^/orgs/(?P<org>{_ID})/(?P<what>postal-address|sending/resume)$")


def handle(deps: Deps, request: JsonRequest, principal: Principal, org: str, what: str) -> Any:
    """One deliverability route for an authorised admin of ``org``."""
    if what == "postal-address":
        if request.method == "GET":
            return postal_address.get(deps, org)
        _allow(request, "GET", "PUT")
        body = _parsed(request, PostalAddressSet)
        return postal_address.replace(deps, org, body.postal_address, principal.user_id)
    if what == "sending/resume":
        _allow(request, "POST")
        asked = _parsed(request, SendingResume)
        return breaker.resume(deps, org, asked.kind, asked.target, principal.user_id, "admin")
    raise NotFound("there is nothing at this path")


def _allow(request: JsonRequest, *allowed: str) -> None:
    if request.method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)


def _parsed(request: JsonRequest, model: Any) -> Any:
    try:
        return request.parse(model)
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None
