"""Notion workspaces per org (issue 17 item 4): connecting one, and finding the one a task or
an event names.

    admin ``POST /orgs/{org}/notion`` ─► ``connect``: prove the workspace is the org's (below)
        ─► claim it for the org (one org per workspace, several workspaces per deployment)
        ─► its token into Secret Manager (the row keeps only the secret's name) ─► a backfill
        run over its mapped databases (``notion_backfill``), its first step on the
        re-embed queue

The proof (issue 31). The webhook routes every event of a workspace to the org that
connected it, so a claim on a workspace id alone would let an org that learnt another's
workspace id take it before that org connects, and be sent its events. A Notion integration
token belongs to one workspace and reads only what that workspace shared with its
integration; only someone the workspace trusted can hand it over. So, before anything is
stored, the token is asked who it is (its bot user's ``workspace_id``, ``GET /v1/users/me``):
a token of another workspace, or one Notion refuses, is ``OwnershipUnproven`` (403); then
each mapped database or page is read with it: an id it cannot read is not (shown to) this
workspace, and is refused the same way, named. A workspace proven, but already connected to
another org, is ``OwnedElsewhere`` (403), the other org never named. Every refusal is written
to the refusing org's audit log, in a transaction of its own; nothing else is stored.

The proof again, every day (``reprove``, from the reconciliation in ``notion_backfill``).
Workspaces connected before connect proved them never were, so an org that named another's
workspace id first may still hold it, be sent its events and keep the rightful org out.
Before a workspace's daily run, its stored token is asked the same question connect asks
(``_proven_workspace``). A token of another workspace, one Notion refuses, or none stored is
a refusal on the org's audit log (actor and channel ``system``, action ``notion.reprove``),
and the workspace is released: its row deleted with its runs
(``store.knowledge.notion_workspaces`` says why a delete, not ``status = 'disconnected'``),
so its events are routed to no org and the rightful org can connect it, and its token
deleted from Secret Manager. A Notion that
cannot answer (5xx, 429, unreachable: ``ProviderUnavailable``) proves nothing either way:
the workspace stays as it is and the error is raised, for the task to be retried.

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
from colony.contracts.reembed import NotionSyncStep
from colony.errors import NotFound, OrgScopeError, OwnedElsewhere, OwnershipUnproven
from colony.flows.deps import FlowDeps
from colony.ports import NotionAccess, NotionWorkspaceClient, SecretStore
from colony.registry.functions import NOTION_REEMBED_QUEUE
from colony.runtime.transport import enqueue
from colony.store import orgdata
from colony.store.approvals import audit
from colony.store.knowledge import notion_workspaces as repo
from colony.webhooks import compact_id

ACTION = "notion.connect"
REPROVE = "notion.reprove"
SYSTEM = "system"  # the actor of what the schedule does


@dataclass(frozen=True, slots=True)
class Workspace:
    """A connected workspace as the workers see it."""

    org_id: str
    workspace_id: str
    secret_name: str
    domains: Mapping[str, str]  # compact Notion database/page id → KC-01..07


# How a worker gets the client of a workspace (production: its token from Secret Manager).
NotionConnector = Callable[[Workspace], NotionWorkspaceClient]


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
    deps: FlowDeps,
    secrets: SecretStore,
    notion: NotionAccess,
    org_id: str,
    body: NotionConnect,
    actor: str,
) -> dict[str, Any]:
    """Connect ``body.workspace_id`` to the org and start its backfill, once ``notion`` (a
    client reading with ``body.token``) proves the workspace and every mapped id are the
    token's; ``actor``: the admin asking (for the audit log)."""
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):  # (its refusals could not be audited either)
            raise NotFound(f"org {org_id!r} does not exist")
    domains = {compact_id(k): v for k, v in body.domains.items()}
    workspace_id = _proven_workspace(deps, notion, org_id, body.workspace_id, actor)
    unreadable = [object_id for object_id in domains if notion.object_kind(object_id) is None]
    if unreadable:
        _refuse(deps, org_id, workspace_id, actor, OwnershipUnproven.code, unreadable)
        named = ", ".join(repr(i) for i in unreadable)
        raise OwnershipUnproven(
            f"the token of Notion workspace {workspace_id!r} cannot read {named}: share each"
            " database or page with the workspace's integration, or leave it out of domains"
        )
    name = secret_name(org_id, workspace_id)
    sync_id = f"bf-{uuid.uuid4().hex}"
    with deps.db.transaction(org_id) as cur:
        claimed = repo.connect(cur, org_id, workspace_id, name, domains)
        if claimed:
            repo.start_sync(cur, sync_id, org_id, workspace_id, "backfill", sorted(domains))
            # Inside the transaction: if the token cannot be stored, the claim is not kept.
            secrets.put(name, body.token.get_secret_value())
    if not claimed:
        _refuse(deps, org_id, workspace_id, actor, OwnedElsewhere.code)
        raise OwnedElsewhere(
            f"Notion workspace {workspace_id!r} is already connected to another organisation"
        )
    task = start_step(deps, org_id, workspace_id, sync_id)
    return {
        "workspace_id": workspace_id,
        "status": "connected",
        "domains": domains,
        "backfill": {"sync_id": sync_id, "task": task},
    }


def _proven_workspace(
    deps: FlowDeps,
    notion: NotionAccess,
    org_id: str,
    named: str,
    actor: str,
    channel: audit.Channel = "admin",
    action: str = ACTION,
) -> str:
    """The workspace id as Notion names it, if the token is that workspace's; else the
    refusal, audited, raised. Ids compare as Notion's do (dashes and case aside); the one
    kept is Notion's, the form its events carry."""
    proven = notion.bot_workspace()
    if proven is None or compact_id(proven) != compact_id(named):
        _refuse(deps, org_id, named, actor, OwnershipUnproven.code, channel=channel, action=action)
        raise OwnershipUnproven(
            f"the token given is not proven to be the integration token of Notion workspace"
            f" {named!r}: give the access token of the integration installed in that workspace"
        )
    return proven


def reprove(deps: FlowDeps, secrets: SecretStore, clients: NotionConnector, ws: Workspace) -> bool:
    """Whether connected workspace ``ws`` is still proven by its stored token (the proof
    ``connect`` makes); ``False`` once it is released, the refusal audited first. A transient
    failure of Notion or Secret Manager (``ProviderUnavailable``) is raised, ``ws`` left
    connected."""
    try:
        notion = clients(ws)
    except NotFound:  # no token stored (a release cut short after deleting it): unprovable
        code = OwnershipUnproven.code
        _refuse(deps, ws.org_id, ws.workspace_id, SYSTEM, code, channel="system", action=REPROVE)
        _release(deps, secrets, ws)
        return False
    try:
        _proven_workspace(deps, notion, ws.org_id, ws.workspace_id, SYSTEM, "system", REPROVE)
    except OwnershipUnproven:  # refused and audited
        _release(deps, secrets, ws)
        return False
    return True


def _release(deps: FlowDeps, secrets: SecretStore, ws: Workspace) -> None:
    """Delete the workspace's row (and its runs) and its token. The token goes inside the
    transaction: if it cannot be deleted, the row is kept and the task's retry tries again; a
    commit lost after it was deleted leaves a row without a token, which the next re-proof
    releases (``reprove``: none stored). A step of one of its runs still queued then finds no
    workspace and is refused before Notion is called (``workspace``)."""
    with deps.db.transaction(ws.org_id) as cur:
        repo.release(cur, ws.workspace_id)
        secrets.delete(ws.secret_name)


def _refuse(
    deps: FlowDeps,
    org_id: str,
    workspace_id: str,
    actor: str,
    reason: str,
    unreadable: list[str] | None = None,
    *,
    channel: audit.Channel = "admin",
    action: str = ACTION,
) -> None:
    """The refusal on the org's audit log, in a transaction of its own (never the token)."""
    detail: dict[str, Any] = {"resource": "notion_workspace", "workspace_id": workspace_id}
    if unreadable:
        detail["unreadable"] = unreadable
    entry = audit.Entry(
        event="refusal", actor=actor, channel=channel, action=action, reason=reason, detail=detail
    )
    with deps.db.transaction(org_id) as cur:
        audit.append(cur, org_id, entry)


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
