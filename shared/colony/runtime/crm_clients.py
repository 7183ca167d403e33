"""What a CRM push needs (``colony.flows.crm.pushes.CrmParts``), built once per instance on
the first push: the org secrets' store, the HubSpot app's OAuth (httpx) and a HubSpot client
per org token, its idempotency keys in that org's ``crm_writes`` (``DbLedger``). The
HubSpot SDK (``hubspot-api-client``) loads here only, with the first push."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from colony.flows.crm.pushes import CrmParts
    from colony.runtime.deps import Deps

_lock = threading.Lock()
_built: dict[tuple[int, int], CrmParts] = {}  # by (settings, database) of the deps


def crm_parts(deps: Deps) -> CrmParts:
    """This instance's ``CrmParts`` for ``deps`` (its settings and database)."""
    # lazy: the SDK (0.4 s, 18.6 MB) and the OAuth client load with the first push
    from colony.adapters.hubspot import hubspot_for_token
    from colony.adapters.hubspot_oauth import hubspot_oauth
    from colony.flows.crm.pushes import CrmParts
    from colony.runtime.org_secrets import secret_store
    from colony.store.crm.writes import DbLedger

    key = (id(deps.settings), id(deps.db))
    with _lock:
        parts = _built.get(key)
        if parts is None:
            settings, db = deps.settings, deps.db
            parts = _built[key] = CrmParts(
                secrets=secret_store(settings),
                auth=hubspot_oauth(settings),
                connect=lambda org, token: hubspot_for_token(settings, token, DbLedger(db, org)),
            )
        return parts
