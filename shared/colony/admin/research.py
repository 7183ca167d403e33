"""The admin API's research routes (``colony.admin.api`` authorises the caller first):

- ``POST /orgs/{org}/research`` (``ResearchRequest``: a domain or URL, ``force``) → 202
  ``{"domain", "state"}``: ``started`` (a task is queued), ``running`` (a pass is under way)
  or ``ready`` (researched within the freshness window: nothing to fetch);
- ``GET /orgs/{org}/research/{domain}`` → the research as it stands: its last pass and every
  page asked for (URL, role, outcome, dates; never a page's text), or ``"job": null``.

What an org researches is its own: another org's research of the same company is neither
seen nor reused (RLS). A value that names no company domain (an IP address, ``localhost``)
is a 422.
"""

from __future__ import annotations

import re
from typing import Any

from colony.contracts.research import ResearchRequest
from colony.errors import Unprocessable, ValidationFailed
from colony.flows.research import requests as research
from colony.runtime.auth import Principal
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ID = r"[A-Za-z0-9_.:-]{1,128}"
RESEARCH = re.compile(rf"^/orgs/(?P<org>{_ID})/research(?:/(?P<domain>[A-Za-z0-9.-]{{1,253}}))?$")


def handle(
    deps: Deps, request: JsonRequest, principal: Principal, org: str, domain: str | None
) -> Any:
    """One research route for an authorised admin of ``org``."""
    if domain is not None:
        if request.method != "GET":
            raise MethodNotAllowed("this method is not allowed here", allow=("GET",))
        return research.status(deps, org, domain)
    if request.method != "POST":
        raise MethodNotAllowed("this method is not allowed here", allow=("POST",))
    try:
        asked = request.parse(ResearchRequest)
        state = research.request(
            deps, org, asked.domain, requested_by=principal.user_id, force=asked.force
        )
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None
    return {"domain": research.domain_of(asked.domain), "state": state}, 202
