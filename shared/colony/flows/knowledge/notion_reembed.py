"""Flow 4, Notion sync, the worker half (SPEC §6.4; seed §3.2): re-embed one page.

    re-embed job (from ``notion_webhook``) ─► fetch the page ─► map it by its CURRENT
        parent (unmapped: its chunks are deleted) ─► its block tree ─► chunks along its blocks
        (``knowledge.chunking.chunk_blocks``: an edit changes only its own block's chunk) ─►
        ``KnowledgeStore.sync_source`` (content hashes: only changed chunks embedded, in one
        batch, so a page moved to another mapped database changes domain without
        re-embedding; vanished chunks deleted; all in ONE transaction per page) ─► a trashed,
        archived or unreachable page is removed

The job names its org and workspace (``flows.knowledge.notion_webhook`` routed the event); the
worker reads with that workspace's own client (its token), and only a workspace connected to the
job's org is read: a job naming another org's workspace is refused. ``sync_page`` is what the
backfill (``flows.knowledge.notion_backfill``) reuses for each page a database query lists.
"""

from __future__ import annotations

import logging
from typing import Any

from colony.contracts.reembed import NotionReembed
from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.knowledge import kc_tiering
from colony.flows.knowledge.notion_pages import domain_for
from colony.flows.knowledge.notion_workspaces import NotionConnector, Workspace, workspace
from colony.knowledge.chunking import chunk_blocks
from colony.knowledge.store import ChunkIn, SyncResult
from colony.ports import NotionClient, NotionPage
from colony.store.rejections import DbRejections

log = logging.getLogger("colony.notion_sync")


def reembed(deps: FlowDeps, job: NotionReembed, connect: NotionConnector) -> dict[str, Any]:
    """Make the KC chunks of one Notion page equal the page as it is now: in the domain its
    current parent maps to (moved there if it was elsewhere), or gone when nothing maps it."""
    # Raises OrgScopeError unless the job's org holds the workspace (a forged or misrouted
    # task must not write one org's workspace into another).
    ws = workspace(deps, job.org_id, job.workspace_id)
    notion = connect(ws)
    try:
        page = notion.page(job.page_id)
    except NotFound:  # deleted for good, or no longer shared with the integration
        removed = deps.knowledge.delete_source(job.org_id, "notion", job.page_id)
        return {"page_id": job.page_id, "removed": removed}
    return sync_page(deps, ws, page, notion, job.edited_time)


def sync_page(
    deps: FlowDeps, ws: Workspace, page: NotionPage, notion: NotionClient, edited: str
) -> dict[str, Any]:
    """Sync one page (as Notion described it) into the domain its parent maps to."""
    org = ws.org_id
    if page.gone:
        removed = deps.knowledge.delete_source(org, "notion", page.id)
        return {"page_id": page.id, "removed": removed}
    domain = domain_for(ws.domains, page.id, page.parent_id)
    if domain is None:  # moved out of every mapped database (or never in one)
        removed = deps.knowledge.delete_source(org, "notion", page.id)
        return {"page_id": page.id, "removed": removed, "reason": "unmapped"}
    try:
        text = notion.page_text(page.id)
        chunks = [
            ChunkIn(
                domain,
                piece,
                title=page.title or None,
                tags={"notion_page": page.id, "edited": page.last_edited_time},
            )
            for piece in chunk_blocks(text.paragraphs)
        ]
        # Everything was fetched first: the store writes it in one transaction, or nothing.
        result: SyncResult = deps.knowledge.sync_source(org, "notion", page.id, chunks)
    except ValidationFailed as error:
        return _failed(deps, org, page.id, edited, error)
    if result.outgrown:
        kc_tiering.schedule(deps, org)
    return {
        "page_id": page.id,
        "domain": domain,
        "chunks": len(chunks),
        "embedded": result.embedded,
        "unchanged": result.unchanged,
        "deleted": result.deleted,
        "unsupported_blocks": text.unsupported,
    }


def _failed(
    deps: FlowDeps, org: str, page_id: str, edited: str, error: ValidationFailed
) -> dict[str, Any]:
    """The page's content cannot be stored (too many blocks, a chunk past the store's limit):
    a retry would fail the same way, and Cloud Tasks retries anything but a 2xx. Recorded for
    the operator (ids and the reason, never content), acknowledged; the page's chunks stay
    as they were."""
    reason = f"{error.code}: {error}"
    DbRejections(deps.db).record("reembed", f"{page_id}@{edited}", org, reason)
    log.warning("reembed of Notion page %s failed: %s", page_id, error.code)
    return {"page_id": page_id, "status": "failed", "error": reason}
