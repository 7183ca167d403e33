"""The records' routes on the chat function (issue 34 item 1), for /overview's Prospects, Deals
and Calls views (``records.js``); the flows are ``colony.flows.insights.prospects``,
``deal_pages`` and ``calls``.

    GET /prospects[?q=&tier=&min_score=&max_score=&status=&campaign=&signal=&replied=&offset=]
                              a page of the org's prospects (50), best ICP score first, and
                              how many match in all
    GET /prospects/<id>       one prospect: fields, ICP score and reasons, signals, sequences
                              and the next step, messages with their replies, decisions
    GET /deals                the org's deals by stage, each stage's count and value
    GET /deals/<id>           one deal: its contact, its calls, what was recommended about
                              it and the decisions on that
    GET /calls[?offset=]      a page of the org's recorded calls, newest first
    GET /calls/<id>           one call: its transcript, its pass-1 signals and where each was
                              said, the summary, the recommendations that came from it

Reading only, as the page's signed-in person (a verified bearer token of the org).
"""

from __future__ import annotations

import re
from typing import Any

from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.insights import calls, deal_pages, prospects
from colony.runtime.auth import Principal
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ONE = re.compile(r"^/(prospects|calls|deals)/([^/]{1,200})$")


def handle(deps: FlowDeps, who: Principal, request: JsonRequest) -> Any:
    if request.method != "GET":
        raise MethodNotAllowed("this method is not allowed here", allow=("GET",))
    if request.path == "/deals":
        return deal_pages.by_stage(deps, who.org_id)
    if request.path in ("/prospects", "/calls"):
        raw = request.args.get("offset") or "0"
        if not raw.isdigit() or len(raw) > 9:
            raise ValidationFailed("offset must be a whole number from 0")
        if request.path == "/calls":
            return calls.listing(deps, who.org_id, int(raw))
        filters = prospects.filters_from(request.args)
        return prospects.listing(deps, who.org_id, filters, int(raw))
    if match := _ONE.match(request.path):
        what, key = match.groups()
        if what == "calls":
            return calls.call(deps, who.org_id, key)
        if what == "deals":
            return deal_pages.deal(deps, who.org_id, key)
        return prospects.prospect(deps, who.org_id, key)
    raise NotFound("there is nothing at this path")
