"""The admin API's sending-domain routes (``colony.admin.api`` authorises the caller first):

- ``GET /orgs/{org}/sending-domains`` → the org's domains: status (``pending``, ``verified``,
  ``paused``), the last check's problems and the TXT records each must publish;
- ``POST /orgs/{org}/sending-domains`` (``SendingDomainAdd``: ``{"domain"}``) → 201 with the
  domain once its DNS passes; 422 ``domain_unverified`` while it does not, whose
  ``error.domain`` lists the problems and the TXT records to publish (add it again after
  publishing them: the key stays the same); 422 ``unprocessable`` for a value that is not a
  domain name; 403 ``owned_by_another_org`` for a domain another org verified (audited).

The checks and the rules are ``flows.outbound.sending_domains``; DNS is asked through the
system's resolver (``COLONY_DNS_RESOLVER`` locally), the DKIM private key goes to the secret
store (Secret Manager).
"""

from __future__ import annotations

import re
from typing import Any

from colony.contracts.admin import SendingDomainAdd
from colony.errors import Unprocessable, ValidationFailed
from colony.flows.outbound import sending_domains
from colony.runtime.auth import Principal
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

_ID = r"[A-Za-z0-9_.:-]{1,128}"
SENDING_DOMAINS = re.compile(rf"^/orgs/(?P<org>{_ID})/sending-domains$")


def handle(deps: Deps, request: JsonRequest, principal: Principal, org: str) -> Any:
    """One sending-domain route for an authorised admin of ``org``."""
    if request.method == "GET":
        return sending_domains.domains(deps, org)
    if request.method != "POST":
        raise MethodNotAllowed("this method is not allowed here", allow=("GET", "POST"))
    try:
        asked = request.parse(SendingDomainAdd)
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None
    # lazy: dnspython and Secret Manager's REST client load with the first domain added
    from colony.adapters.dns import resolver_from_settings
    from colony.runtime.org_secrets import secret_store

    dns = resolver_from_settings(deps.settings)
    secrets = secret_store(deps.settings)
    added = sending_domains.add(deps, dns, secrets, org, asked.domain, principal.user_id)
    return added, 201
