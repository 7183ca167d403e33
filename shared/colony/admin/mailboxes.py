"""The admin API's sender-mailbox routes (issue 39 item 2; ``colony.admin.api`` authorises the
caller first: a verified token of the path's org carrying the admin role):

- ``GET /orgs/{org}/mailboxes`` → the org's mailboxes: address, display name, kind, daily
  limit and warm-up, today's limit and count, status, domain status, grant, and
  ``waits_because`` when it cannot send now;
- ``POST /orgs/{org}/mailboxes`` (``MailboxAdd``) → 201 with the mailbox; 422 when its
  address is not on one of the org's verified sending domains or the ramp cannot work, 409
  when the org has it already;
- ``GET`` / ``PUT /orgs/{org}/mailboxes/{id}`` (``MailboxChange``: the fields given change)
  → the mailbox; 404 when it is not this org's; ``{"status": "active"}`` hands what
  waited for it back to the queue;
- ``POST /orgs/{org}/mailboxes/{id}/connect`` → 201 ``{"authorize_url", "expires_at"}`` for a
  ``gmail`` / ``graph`` mailbox; ``.../callback`` (``MailboxCallback``: ``code``, ``state``)
  → connected, 403 when the state is not this org's, this person's and this mailbox's, or
  the grant is for another account; ``.../disconnect`` → its grant given back.

The flows are ``flows.outbound.mailboxes`` and ``flows.outbound.mailbox_grants``; the Gmail
and Graph clients (httpx) and Secret Manager are built on the first grant route.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from colony.contracts.mailboxes import MailboxAdd, MailboxCallback, MailboxChange
from colony.errors import Unprocessable, ValidationFailed
from colony.flows.outbound import mailbox_grants, mailboxes
from colony.runtime.auth import Principal
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ID = r"[A-Za-z0-9_.:-]{1,128}"
MAILBOXES = re.compile(
    rf"^/orgs/(?P<org>{_ID})/mailboxes"
    rf"(?:/(?P<id>{_ID})(?:/(?P<what>connect|callback|disconnect))?)?$"
)


def _parse(request: JsonRequest, model: type[BaseModel]) -> Any:
    try:
        return request.parse(model)
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None


def _allow(request: JsonRequest, *allowed: str) -> None:
    if request.method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)


def handle(
    deps: Deps,
    request: JsonRequest,
    principal: Principal,
    org: str,
    mailbox: str | None,
    what: str | None,
) -> Any:
    """One mailbox route for an authorised admin of ``org``."""
    user = principal.user_id
    if mailbox is None:
        _allow(request, "GET", "POST")
        if request.method == "GET":
            return mailboxes.listing(deps, org)
        return mailboxes.add(deps, org, _parse(request, MailboxAdd), user), 201
    if what is None:
        _allow(request, "GET", "PUT")
        if request.method == "GET":
            return mailboxes.get(deps, org, mailbox)
        return mailboxes.change(deps, org, mailbox, _parse(request, MailboxChange), user)
    _allow(request, "POST")
    # lazy: httpx (the Gmail and Graph clients) and Secret Manager's REST client load with
    # the first grant route
    from colony.runtime.mailbox_apis import mailbox_apis_from_settings
    from colony.runtime.org_secrets import secret_store

    apis = mailbox_apis_from_settings(deps.settings)
    if what == "connect":
        return mailbox_grants.start(deps, apis, org, mailbox, user), 201

    secrets = secret_store(deps.settings)
    if what == "disconnect":
        return mailbox_grants.disconnect(deps, secrets, apis, org, mailbox, user)
    body = _parse(request, MailboxCallback)
    return mailbox_grants.complete(deps, secrets, apis, org, mailbox, user, body)
