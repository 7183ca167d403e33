"""Cloud Tasks target of the re-embed queue: page re-embeds, sync steps, and each org's share
of the daily notion-reconcile schedule (OIDC in production).

Bodies (``contracts.reembed.NotionTaskBody``): ``notion.reembed`` (one page, from the webhook),
``notion.sync`` (one step of a backfill or reconciliation run), ``notion.reconcile`` with an
``org_id`` (prove each of the org's connected workspaces again with its stored token, release
any it no longer proves, and start the day's reconciliation of the others).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.compose.knowledge import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json
from colony.runtime.edge.invoker import invoker_only

if TYPE_CHECKING:
    from colony.runtime.notion_clients import WorkspaceClients

_clients: WorkspaceClients | None = None


@functions_framework.http
@http_json(caller=invoker_only("reembed"))  # Cloud Tasks / Scheduler, by OIDC
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the Notion clients (httpx), Secret Manager and the flows load on the first request
    from colony.contracts.reembed import NotionReconcile, NotionSyncStep, NotionTaskBody
    from colony.flows.knowledge.notion_backfill import reconcile, step
    from colony.flows.knowledge.notion_reembed import reembed
    from colony.runtime.notion_clients import WorkspaceClients, secret_store

    global _clients
    d = deps(parts)
    task = request.parse(NotionTaskBody).root
    secrets = secret_store(d.settings)
    if _clients is None:
        _clients = WorkspaceClients(d.settings, secrets)
    if isinstance(task, NotionReconcile):
        return reconcile(d, task.org_id, _clients, secrets)
    if isinstance(task, NotionSyncStep):
        return step(d, task, _clients)
    return reembed(d, task, _clients)
