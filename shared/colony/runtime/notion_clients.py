"""The Notion clients of connected workspaces, for the re-embed worker (and the daily
re-proof of each workspace before its reconciliation): one per workspace, reading with that
workspace's token from the ``SecretStore`` (Secret Manager), built on first
use and kept for ``TOKEN_TTL_SECONDS`` (a reconnect writes a new token version; the worker
picks it up within that time). The clients do not sleep on a 429 (``attempts=1``): the
flows reschedule their task after the ``Retry-After`` instead, or let Cloud Tasks retry.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from colony.adapters.notion import notion_for_token
from colony.flows.knowledge.notion_workspaces import Workspace
from colony.ports import NotionWorkspaceClient, SecretStore
from colony.runtime.org_secrets import secret_store as secret_store  # its callers' old home
from colony.settings import Settings

TOKEN_TTL_SECONDS = 300.0


class WorkspaceClients:
    """``flows.knowledge.notion_workspaces.NotionConnector``: a workspace → its client."""

    def __init__(
        self,
        settings: Settings,
        secrets: SecretStore,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings, self._secrets, self._clock = settings, secrets, clock
        self._clients: dict[str, tuple[float, NotionWorkspaceClient]] = {}
        self._lock = threading.Lock()

    def __call__(self, workspace: Workspace) -> NotionWorkspaceClient:
        key = workspace.secret_name
        with self._lock:
            cached = self._clients.get(key)
            if cached is not None and self._clock() - cached[0] < TOKEN_TTL_SECONDS:
                return cached[1]
        token = self._secrets.get(key)
        client = notion_for_token(self._settings, token, attempts=1)
        with self._lock:
            self._clients[key] = (self._clock(), client)
        return client
