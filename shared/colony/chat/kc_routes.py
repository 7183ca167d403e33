"""The Knowledge Core editor's routes on the chat function (issue 34 item 2), for /overview's
Knowledge view (``kc.js``); the flow is ``colony.flows.knowledge.kc_editor``.

    GET    /kc                                   the ten domains and the org's counts
    GET    /kc/domains/<KC-xx>/documents[?contains=&offset=]
                                                 a page of a domain's documents
    GET    /kc/domains/<KC-xx>/search?q=[&k=]    what an agent's retrieval returns for q
    POST   /kc/documents                         write a document (``KcDocumentWrite``) → 201
    GET    /kc/document?source=&id=              one document and its chunks
    PUT    /kc/document?source=&id=              replace its title, text and tags
    DELETE /kc/document?source=&id=              retire it
    POST   /kc/exemplars                         seed a KC-08 exemplar (``ExemplarSeed``) → 201

The caller is the page's signed-in person (a verified bearer token of the org); every change
is theirs on the audit log. A Notion document is read-only (409, with its page's link).
"""

from __future__ import annotations

import re
from typing import Any

from colony.contracts.knowledge import ExemplarSeed, KcDocumentWrite
from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.knowledge import kc_editor
from colony.runtime.auth import Principal
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_DOMAIN = re.compile(r"^/kc/domains/(KC-\d\d)/(documents|search)$")


def handle(deps: FlowDeps, who: Principal, request: JsonRequest) -> Any:
    path, method, org = request.path, request.method, who.org_id
    if path == "/kc":
        _allow(method, "GET")
        return kc_editor.domains(deps, org)
    if match := _DOMAIN.match(path):
        _allow(method, "GET")
        domain, what = match.groups()
        if what == "search":
            query = request.args.get("q", "")
            return kc_editor.search(deps, org, domain, query, _number(request, "k", 5))
        contains = request.args.get("contains")
        return kc_editor.listing(deps, org, domain, contains, _number(request, "offset", 0))
    if path == "/kc/documents":
        _allow(method, "POST")
        return kc_editor.save(deps, org, who.user_id, request.parse(KcDocumentWrite)), 201
    if path == "/kc/exemplars":
        _allow(method, "POST")
        return kc_editor.seed_exemplar(deps, org, who.user_id, request.parse(ExemplarSeed)), 201
    if path == "/kc/document":
        _allow(method, "GET", "PUT", "DELETE")
        ref = request.args.get("source", ""), request.args.get("id", "")
        if method == "GET":
            return kc_editor.document(deps, org, *ref)
        if method == "DELETE":
            return kc_editor.retire(deps, org, who.user_id, *ref)
        return kc_editor.save(deps, org, who.user_id, request.parse(KcDocumentWrite), ref)
    raise NotFound("there is nothing at this path")


def _allow(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)


def _number(request: JsonRequest, name: str, default: int) -> int:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 9:
        raise ValidationFailed(f"{name} must be a whole number")
    return int(raw)
