"""How Colony reaches an org's HubSpot, both ways: the sync
(``colony.flows.crm.backfill.CrmAccess``: the org's access token, refreshed or the connection
paused, ``connections.with_client``) and write-back (``connect``, handed to
``colony.flows.crm.pushes.CrmParts``). Either way it is the HubSpot adapter on the org's
token with ``attempts=1`` (a 429 is never slept on: the task is rescheduled after its
``Retry-After``), every HTTP request of it counted first against the portal's limit shared by
every instance and every kind of work (``flows.crm.limits``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from colony.adapters.hubspot import hubspot_for_token
from colony.adapters.hubspot_oauth import hubspot_oauth
from colony.flows.crm import connections
from colony.flows.crm.limits import SharedLimit
from colony.flows.deps import FlowDeps
from colony.ports import CrmClient
from colony.runtime.org_secrets import secret_store
from colony.store.crm.writes import DbLedger


class HubSpotAccess:
    """``CrmAccess`` for the orgs of one deployment; ``close`` when done. ``clock``: the
    limiter's (epoch seconds)."""

    def __init__(
        self, deps: FlowDeps, *, attempts: int = 1, clock: Callable[[], float] = time.time
    ) -> None:
        self._deps, self._attempts, self._clock = deps, attempts, clock
        self.auth = hubspot_oauth(deps.settings)
        self.secrets = secret_store(deps.settings)
        self.limits: dict[str, SharedLimit] = {}
        # one SDK client per token (building one costs more than a call): a refreshed token
        # gets a new one
        self._clients: dict[tuple[str, str], CrmClient] = {}

    def connect(self, org_id: str, token: str) -> CrmClient:
        """The org's client on ``token``, counted against its portal's shared limit."""
        key = (org_id, token)
        if key not in self._clients:
            if len(self._clients) > 100:
                self._clients.clear()
            deps = self._deps
            account = str(connections.status(deps, org_id).get("account_id") or "")
            limit = self.limits.setdefault(
                account, SharedLimit(deps.db, account, clock=self._clock)
            )
            self._clients[key] = hubspot_for_token(
                deps.settings,
                token,
                DbLedger(deps.db, org_id),
                attempts=self._attempts,
                budget=limit,
            )
        return self._clients[key]

    def __call__(self, org_id: str, work: Callable[[CrmClient], Any]) -> Any:
        return connections.with_client(
            self._deps,
            self.secrets,
            self.auth,
            lambda token: self.connect(org_id, token),
            org_id,
            work,
        )

    def close(self) -> None:
        self.auth.close()
