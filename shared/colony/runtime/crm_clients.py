"""What a CRM push needs (``colony.flows.crm.pushes.CrmParts``), built once per instance on
the first push: the org secrets' store, the HubSpot app's OAuth (httpx) and a HubSpot client
per org token, its idempotency keys in that org's ``crm_writes`` (``DbLedger``), all from the
same ``HubSpotAccess`` as the sync's (``colony.runtime.crm_access``): write-back's requests
count against the portal's one shared limit. The HubSpot SDK (``hubspot-api-client``) loads
here only, with the first push."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from colony.flows.crm.pushes import CrmParts
    from colony.runtime.crm_access import HubSpotAccess
    from colony.runtime.deps import Deps

_lock = threading.Lock()
_built: dict[tuple[int, int], HubSpotAccess] = {}  # by (settings, database) of the deps


def hubspot_access(deps: Deps) -> HubSpotAccess:
    """This instance's ``HubSpotAccess`` for ``deps`` (its settings and database)."""
    # lazy: the SDK (0.4 s, 18.6 MB) and the OAuth client load with the first task
    from colony.runtime.crm_access import HubSpotAccess

    key = (id(deps.settings), id(deps.db))
    with _lock:
        access = _built.get(key)
        if access is None:
            access = _built[key] = HubSpotAccess(deps)
        return access


def crm_parts(deps: Deps) -> CrmParts:
    """This instance's ``CrmParts`` for ``deps``: the sync's access, seen as write-back's."""
    # lazy: write-back's flow loads with the first push or card read, not with a sync task
    from colony.flows.crm.pushes import CrmParts

    access = hubspot_access(deps)
    return CrmParts(secrets=access.secrets, auth=access.auth, connect=access.connect)
