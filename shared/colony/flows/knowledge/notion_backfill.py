"""Flow 4, Notion sync, the bulk half (issue 17 item 4): backfill and daily reconciliation.

    connect (``notion_workspaces``) or the daily schedule's task (``reconcile``: each
        workspace proven again with its stored token first, ``notion_workspaces.reprove``;
        one it no longer proves is released, not run) ─► a run
        in ``notion_syncs`` over the workspace's mapped ids ─► one Cloud Tasks step per page of
        a database query (``PAGE_SIZE`` pages): each listed page whose ``last_edited_time``
        differs from the one its chunks were synced from is synced (``notion_reembed.sync_page``:
        content hashes, so only changed chunks are embedded); the others are skipped unread
        ─► checkpoint (mapped id, Notion cursor, step + 1) ─► the next step's task

Durable and resumable: the run's state is the checkpoint, not the task. A task carries the
step it is for; only the current step advances the checkpoint, so a duplicate delivery does
nothing, and a step whose successor was lost re-queues it (tasks are named by run and step,
so a re-queue of a task that exists is one task). Rate limits: Notion's 429 comes back at
once (the workers' client does not sleep, ``notion_for_token(attempts=1)``), and the step is
queued again after the ``Retry-After`` it gave; pages synced before it are skipped next time,
their edit time now matching. A mapped id that is a page, not a database (Notion answers
404 to the query), is synced as that one page.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from colony.contracts.reembed import NotionSyncStep
from colony.errors import NotFound, OrgScopeError, ProviderUnavailable
from colony.flows.deps import FlowDeps
from colony.flows.knowledge.notion_reembed import sync_page
from colony.flows.knowledge.notion_workspaces import (
    NotionConnector,
    Workspace,
    reprove,
    start_step,
    workspace,
)
from colony.ports import DatabasePage, NotionClient, SecretStore
from colony.registry.functions import NOTION_REEMBED_QUEUE
from colony.runtime.transport import enqueue
from colony.store.knowledge import notion_workspaces as repo

PAGE_SIZE = 25  # pages per step: a step stays well inside the worker's timeout
DEFAULT_RETRY_AFTER = 30.0  # when a 429 names no Retry-After
MAX_RETRY_AFTER = 3600.0


def step(deps: FlowDeps, task: NotionSyncStep, connect: NotionConnector) -> dict[str, Any]:
    """Run step ``task.step`` of its run, if it is the current one."""
    ws = workspace(deps, task.org_id, task.workspace_id)
    with deps.db.transaction(task.org_id) as cur:
        run = repo.sync(cur, task.sync_id)
    if run is None or run["workspace_id"] != task.workspace_id:
        raise OrgScopeError(f"Notion sync {task.sync_id!r} is not a run of this workspace")
    if run["status"] == "done":
        return {"sync_id": task.sync_id, "status": "done"}
    if task.step != run["step"]:
        if task.step == run["step"] - 1:  # its checkpoint landed, its successor may not have
            _queue(deps, task, run["step"])
        return {"sync_id": task.sync_id, "status": "stale", "current_step": run["step"]}
    targets: list[str] = list(run["targets"])
    position = int(run["position"])
    notion = connect(ws)
    try:
        listing = _list(notion, targets[position], run["cursor"]) if targets else None
        seen, synced, skipped = _sync_listing(deps, ws, notion, listing)
    except ProviderUnavailable as error:
        return _rate_limited(deps, task, error)
    cursor = listing.next_cursor if listing else None
    if cursor is None:
        position += 1
    done = position >= len(targets)
    with deps.db.transaction(task.org_id) as cur:
        advanced = repo.advance(
            cur,
            task.sync_id,
            task.step,
            position=position,
            cursor=cursor,
            seen=seen,
            synced=synced,
            skipped=skipped,
            done=done,
        )
    if not advanced:  # a concurrent delivery of this step got there first
        return {"sync_id": task.sync_id, "status": "stale"}
    if not done:
        _queue(deps, task, task.step + 1)
    return {
        "sync_id": task.sync_id,
        "status": "done" if done else "running",
        "step": task.step,
        "pages": seen,
        "synced": synced,
        "skipped": skipped,
    }


def _list(notion: NotionClient, target: str, cursor: str | None) -> DatabasePage:
    try:
        return notion.query_database(target, cursor, PAGE_SIZE)
    except NotFound:  # a single mapped page (or a database no longer shared with us)
        try:
            return DatabasePage([notion.page(target)], None)
        except NotFound:
            return DatabasePage([], None)


def _sync_listing(
    deps: FlowDeps, ws: Workspace, notion: NotionClient, listing: DatabasePage | None
) -> tuple[int, int, int]:
    if listing is None:
        return 0, 0, 0
    with deps.db.transaction(ws.org_id) as cur:
        synced_from = repo.edited_times(cur, [p.id for p in listing.pages])
    synced = skipped = 0
    for page in listing.pages:
        if not page.gone and synced_from.get(page.id) == page.last_edited_time:
            skipped += 1  # unchanged since it was last synced: not even read
            continue
        sync_page(deps, ws, page, notion, page.last_edited_time or "backfill")
        synced += 1
    return len(listing.pages), synced, skipped


def _queue(deps: FlowDeps, task: NotionSyncStep, number: int, *, suffix: str = "") -> str:
    nxt = task.model_copy(update={"step": number})
    return enqueue(
        deps.transport,
        NOTION_REEMBED_QUEUE,
        nxt,
        task_id=f"notion-sync-{task.sync_id}-s{number}{suffix}",
        delay_seconds=0,
    )


def _rate_limited(
    deps: FlowDeps, task: NotionSyncStep, error: ProviderUnavailable
) -> dict[str, Any]:
    """Queue this step again after Notion's ``Retry-After``; answered 2xx, so Cloud Tasks
    does not also retry it on its own schedule."""
    with deps.db.transaction(task.org_id) as cur:
        count = repo.rate_limited(cur, task.sync_id, task.step)
    if count is None:  # another delivery finished the step meanwhile
        return {"sync_id": task.sync_id, "status": "stale"}
    wait = error.retry_after if error.retry_after is not None else DEFAULT_RETRY_AFTER
    wait = min(max(wait, 1.0), MAX_RETRY_AFTER)
    enqueue(
        deps.transport,
        NOTION_REEMBED_QUEUE,
        task,
        task_id=f"notion-sync-{task.sync_id}-s{task.step}-r{count}",
        delay_seconds=wait,
    )
    return {"sync_id": task.sync_id, "status": "rate_limited", "retry_after": wait}


def reconcile(
    deps: FlowDeps,
    org_id: str,
    clients: NotionConnector,
    secrets: SecretStore,
    today: datetime | None = None,
) -> dict[str, Any]:
    """Prove each of the org's connected workspaces again with its stored token
    (``reprove``: one it no longer proves is released), then start the day's reconciliation
    run of each one proven. The run id is the day's, so a retried task starts nothing twice.

    A workspace Notion could not answer for (``ProviderUnavailable``) stays connected and
    gets no run yet: the others' runs start, then that error is raised, so the task is
    retried (one flaky workspace does not hold back the org's others)."""
    with deps.db.transaction(org_id) as cur:
        connected = [str(r["workspace_id"]) for r in repo.list_workspaces(cur, connected_only=True)]
    proven: list[Workspace] = []
    released: list[str] = []
    unanswered: ProviderUnavailable | None = None
    for ws in (workspace(deps, org_id, ws_id) for ws_id in connected):
        try:
            still = reprove(deps, secrets, clients, ws)
        except ProviderUnavailable as error:
            unanswered = unanswered or error
            continue
        if still:
            proven.append(ws)
        else:
            released.append(ws.workspace_id)
    day = (today or deps.clock()).strftime("%Y%m%d")
    runs: list[tuple[str, str]] = []
    with deps.db.transaction(org_id) as cur:
        for ws in proven:
            digest = hashlib.sha256(ws.workspace_id.encode()).hexdigest()[:16]
            sync_id = f"rc-{day}-{digest}"
            repo.start_sync(cur, sync_id, org_id, ws.workspace_id, "reconcile", sorted(ws.domains))
            runs.append((sync_id, ws.workspace_id))
    for sync_id, ws_id in runs:  # after the commit: a step never finds its run missing
        start_step(deps, org_id, ws_id, sync_id)
    if unanswered is not None:
        raise unanswered
    return {"org_id": org_id, "started": [sync_id for sync_id, _ in runs], "released": released}
