"""The Setup view's routes on the chat function (issue 34 item 4), for /overview's forms
(``setup.js``): the org's ICP and anti-ICP rules, its sequence library and its settings, read
and replaced through the admin API's own contracts and flows (``colony.contracts.admin``,
``colony.flows.tenants.org_admin``), so a rule lives in one place.

    GET /setup                         whose page this is: the token's org, and whether the
                                       person is its admin (the page shows the forms or not)
    GET /setup/<org>/icp|sequences|settings
    PUT /setup/<org>/icp|sequences|settings
                                       read or replace one (``IcpReplace``,
                                       ``SequenceLibrary``, ``OrgSettingsReplace``)

Who may: the admin API's check (``runtime.auth.require_org_admin``): a verified bearer
token (verified here, not by ``chat.api``, so a refused token is recorded too) whose org is
``<org>`` (a form loaded for one org never writes another the session has since switched to)
and which carries the admin role; a refusal is a 401 or 403, recorded as the admin API
records it. Each replace is on the audit log as the person's (channel ``ui``).

A body that breaks its contract is a 422 whose ``error.fields`` lists ``{"field",
"message"}`` (pydantic's ``loc`` as a dotted path), for the form to put each message beside
its field. A model validator's sentence begins with the path it concerns (``"tiers: ..."``,
``"sequences.2: ..."``, ``"sending.mail_from: ..."``: the contracts' own convention), and that
path names its field.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from colony.errors import FieldsInvalid, NotFound, Unauthorized, ValidationFailed
from colony.runtime.auth import is_org_admin, require_org_admin, verify_bearer
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

if TYPE_CHECKING:
    import pydantic

    from colony.runtime.deps import Deps

FUNCTION = "chat"
_ONE = re.compile(r"^/setup/(?P<org>[A-Za-z0-9_.:-]{1,128})/(?P<what>icp|sequences|settings)$")
_PATH = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*): (.+)$", re.DOTALL)
_FIELDS_SHOWN = 50  # a form with more faults than this shows the first fifty


def handle(deps: Deps, request: JsonRequest) -> Any:
    if request.path == "/setup":
        _allow(request.method, "GET")
        who = verify_bearer(request.authorization, deps.settings)
        return {"org_id": who.org_id, "admin": is_org_admin(who.claims)}
    match = _ONE.match(request.path)
    if match is None:
        raise NotFound("there is nothing at this path")
    _allow(request.method, "GET", "PUT")
    org = match["org"]
    try:
        who = verify_bearer(request.authorization, deps.settings)
    except Unauthorized as error:
        deps.rejections.record(FUNCTION, None, org, f"unauthorized: {error}")
        raise
    require_org_admin(who, org, lambda why: deps.rejections.record(FUNCTION, None, org, why))
    # lazy: the contracts and their flow load with the first setup request, not with the page
    from colony.contracts.admin import IcpReplace, OrgSettingsReplace, SequenceLibrary
    from colony.flows.tenants import org_admin

    kinds: dict[str, tuple[Any, Any, type[pydantic.BaseModel]]] = {
        "icp": (org_admin.icp, org_admin.replace_icp, IcpReplace),
        "sequences": (org_admin.sequences, org_admin.replace_sequences, SequenceLibrary),
        "settings": (org_admin.settings, org_admin.replace_settings, OrgSettingsReplace),
    }
    read, replace, model = kinds[match["what"]]
    if request.method == "GET":
        return read(deps, org)
    return replace(deps, org, _parse(request, model), actor=who.user_id, channel="ui")


def _allow(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)


def _parse(request: JsonRequest, model: type[pydantic.BaseModel]) -> Any:
    """The body as ``model``; its faults as ``FieldsInvalid``, never quoting a value."""
    # lazy: pydantic loads with the first setup form saved, not with the page
    import pydantic

    if request.body is None:
        raise ValidationFailed("a JSON body is required")
    try:
        return model.model_validate(request.body)
    except pydantic.ValidationError as error:
        fields = field_errors(error)
        said = "; ".join(f"{f['field'] or '(form)'}: {f['message']}" for f in fields[:3])
        raise FieldsInvalid(f"invalid body: {said}", fields[:_FIELDS_SHOWN]) from None


def field_errors(error: pydantic.ValidationError) -> list[dict[str, str]]:
    """Each fault as ``{"field": dotted path, "message"}`` (the path a model validator's
    sentence begins with, when it begins with one)."""
    found = []
    for issue in error.errors(include_url=False, include_input=False, include_context=False):
        field = ".".join(str(part) for part in issue["loc"])
        message = str(issue["msg"]).removeprefix("Value error, ")
        if issue["type"] == "value_error" and (named := _PATH.match(message)):
            field, message = named.group(1), named.group(2)
        found.append({"field": field, "message": message})
    return found
