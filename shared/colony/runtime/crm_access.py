"""How the sync reaches an org's HubSpot (``colony.flows.crm.backfill.CrmAccess``): the org's
access token (refreshed, or the connection paused: ``connections.with_client``), the HubSpot
adapter on it with ``attempts=1`` (a 429 is never slept on here: the task is rescheduled
after its ``Retry-After``), behind the portal's limit shared by every instance
(``flows.crm.limits``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from colony.adapters.hubspot import hubspot_for_token
from colony.adapters.hubspot_oauth import hubspot_oauth
from colony.flows.crm import connections
from colony.flows.crm.limits import LimitedCrm, SharedLimit
from colony.flows.deps import FlowDeps
from colony.ports import CrmClient
from colony.runtime.org_secrets import secret_store
from colony.store.crm.writes import DbLedger


class HubSpotAccess:
    """``CrmAccess`` for the orgs of one deployment; ``close`` when done."""

    def __init__(self, deps: FlowDeps, *, attempts: int = 1) -> None:
        self._deps, self._attempts = deps, attempts
        self._auth = hubspot_oauth(deps.settings)
        self._secrets = secret_store(deps.settings)
        self.limits: dict[str, SharedLimit] = {}
        # one SDK client per token (building one costs more than a call): a refreshed token
        # gets a new one
        self._clients: dict[tuple[str, str], CrmClient] = {}

    def __call__(self, org_id: str, work: Callable[[CrmClient], Any]) -> Any:
        deps = self._deps
        account = str(connections.status(deps, org_id).get("account_id") or "")

        def connect(token: str) -> CrmClient:
            key = (org_id, token)
            if key not in self._clients:
                if len(self._clients) > 100:
                    self._clients.clear()
                ledger = DbLedger(deps.db, org_id)
                client = hubspot_for_token(deps.settings, token, ledger, attempts=self._attempts)
                limit = self.limits.setdefault(account, SharedLimit(deps.db, account))
                self._clients[key] = LimitedCrm(client, limit)
            return self._clients[key]

        return connections.with_client(deps, self._secrets, self._auth, connect, org_id, work)

    def close(self) -> None:
        self._auth.close()
