"""Notion workspaces per org (issue 17 item 4): connecting one, and finding the one a task or
an event names.

    admin ``POST /orgs/{org}/notion`` ─► ``connect``: claim the workspace for the org (one org
        per workspace, several workspaces per deployment) ─► its token into Secret Manager
        (the row keeps only the secret's name) ─► a backfill run over its mapped databases
        (``flows.knowledge.notion_backfill``), its first step on the re-embed queue

Model-free (the Notion webhook imports ``workspace``'s helpers through
``flows.knowledge.notion_webhook``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from colony.contracts.admin import NotionConnect
from colony.contracts.events import NotionSyncStep
from colony.errors import Conflict, OrgScopeError
from colony.flows.deps import FlowDeps
from colony.ports import NotionClient, SecretStore
from colony.registry.functions import NOTION_REEMBED_QUEUE
from colony.runtime.transport import enqueue
from colony.store import notion_workspaces as repo
from colony.webhooks import compact_id


@dataclass(frozen=True, slots=True)
class Workspace:
    """A connected workspace as the workers see it."""

    org_id: str
    workspace_id: str
    secret_name: str
    domains: Mapping[str, str]  # compact Notion database/page id → KC-01..07


# How a worker gets the client of a workspace (production: its token from Secret Manager).
NotionConnector = Callable[[Workspace], NotionClient]


def secret_name(org_id: str, workspace_id: str) -> str:
    """The Secret Manager id of a workspace's token: stable per (org, workspace), and naming
    neither (ids are not secrets, but a secret's name should not need escaping)."""
    digest = hashlib.sha256(f"{org_id}\n{workspace_id}".encode()).hexdigest()[:40]
    return f"colony-notion-{digest}"


def workspace(deps: FlowDeps, org_id: str, workspace_id: str) -> Workspace:
    """The org's connected workspace ``workspace_id``; ``OrgScopeError`` if the org has none
    by that id (another org's workspace is not visible here, so it is refused the same way)."""
    with deps.db.transaction(org_id) as cur:
        row = repo.get(cur, workspace_id)
    if row is None or row["status"] != "connected":
        raise OrgScopeError(f"Notion workspace {workspace_id!r} is not connected to this org")
    return Workspace(org_id, workspace_id, str(row["secret_name"]), dict(row["domains"]))


def connect(
    deps: FlowDeps, secrets: SecretStore, org_id: str, body: NotionConnect
) -> dict[str, Any]:
    """Connect ``body.workspace_id`` to the org and start its backfill."""
    domains = {compact_id(k): v for k, v in body.domains.items()}
    name = secret_name(org_id, body.workspace_id)
    sync_id = f"bf-{uuid.uuid4().hex}"
    with deps.db.transaction(org_id) as cur:
        if not repo.connect(cur, org_id, body.workspace_id, name, domains):
            raise Conflict(
                f"Notion workspace {body.workspace_id!r} is connected to another organisation"
            )
        repo.start_sync(cur, sync_id, org_id, body.workspace_id, "backfill", sorted(domains))
        # Inside the transaction: if the token cannot be stored, the claim is not kept.
        secrets.put(name, body.token.get_secret_value())
    task = start_step(deps, org_id, body.workspace_id, sync_id)
    return {
        "workspace_id": body.workspace_id,
        "status": "connected",
        "domains": domains,
        "backfill": {"sync_id": sync_id, "task": task},
    }


def start_step(deps: FlowDeps, org_id: str, workspace_id: str, sync_id: str) -> str:
    """Queue step 0 of run ``sync_id`` (named, so starting it twice queues it once)."""
    return enqueue(
        deps.transport,
        NOTION_REEMBED_QUEUE,
        NotionSyncStep(org_id=org_id, workspace_id=workspace_id, sync_id=sync_id, step=0),
        task_id=f"notion-sync-{sync_id}-s0",
        delay_seconds=0,
    )


def status(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The org's workspaces and its recent backfill / reconciliation runs."""
    with deps.db.transaction(org_id) as cur:
        workspaces = repo.list_workspaces(cur)
        runs = repo.recent_syncs(cur)
    return {
        "workspaces": [_jsonable(w) for w in workspaces],
        "syncs": [_jsonable(r) for r in runs],
    }


def _jsonable(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}
