"""Flow 4, Notion sync, the worker half (SPEC §6.4; seed §3.2): re-embed one page.

    re-embed job (from ``flows.notion_webhook``) ─► fetch the page ─► map it by its CURRENT
        parent (unmapped: its chunks are deleted) ─► its block tree ─► chunk ─►
        ``KnowledgeStore.sync_source`` (content hashes: only changed chunks embedded, in one
        batch, so a page moved to another mapped database changes domain without
        re-embedding; vanished chunks deleted; all in ONE transaction per page) ─► a trashed,
        archived or unreachable page is removed

The Notion integration reads one workspace, which belongs to one org
(``COLONY_NOTION_ORG_ID``): a job naming any other org is refused.
"""

from __future__ import annotations

import logging
from typing import Any

from colony.contracts.events import NotionReembed
from colony.errors import NotFound, OrgScopeError, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.notion_pages import domain_for
from colony.knowledge.chunking import chunk_text
from colony.knowledge.store import ChunkIn, SyncResult
from colony.ports import NotionClient
from colony.store.rejections import DbRejections

log = logging.getLogger("colony.notion_sync")


def reembed(deps: FlowDeps, job: NotionReembed, notion: NotionClient) -> dict[str, Any]:
    """Make the KC chunks of one Notion page equal the page as it is now: in the domain its
    current parent maps to (moved there if it was elsewhere), or gone when nothing maps it."""
    if job.org_id != deps.settings.notion_org_id:
        # The integration token reads one workspace, which belongs to one org: a job naming
        # any other org (a forged or misrouted task) must not write that workspace into it.
        raise OrgScopeError("this re-embed job names an org the Notion workspace is not for")
    source_id = job.page_id
    try:
        page = notion.page(job.page_id)
    except NotFound:  # deleted for good, or no longer shared with the integration
        removed = deps.knowledge.delete_source(job.org_id, "notion", source_id)
        return {"page_id": job.page_id, "removed": removed}
    if page.gone:
        removed = deps.knowledge.delete_source(job.org_id, "notion", source_id)
        return {"page_id": job.page_id, "removed": removed}
    domain = domain_for(deps.settings.notion_domains, job.page_id, page.parent_id)
    if domain is None:  # moved out of every mapped database (or never in one)
        removed = deps.knowledge.delete_source(job.org_id, "notion", source_id)
        return {"page_id": job.page_id, "removed": removed, "reason": "unmapped"}
    try:
        text = notion.page_text(job.page_id)
        chunks = [
            ChunkIn(
                domain,
                piece,
                title=page.title or None,
                tags={"notion_page": job.page_id, "edited": page.last_edited_time},
            )
            for piece in chunk_text("\n\n".join(text.paragraphs))
        ]
        # Everything was fetched first: the store writes it in one transaction, or nothing.
        result: SyncResult = deps.knowledge.sync_source(job.org_id, "notion", source_id, chunks)
    except ValidationFailed as error:
        return _failed(deps, job, error)
    return {
        "page_id": job.page_id,
        "domain": domain,
        "chunks": len(chunks),
        "embedded": result.embedded,
        "unchanged": result.unchanged,
        "deleted": result.deleted,
        "unsupported_blocks": text.unsupported,
    }


def _failed(deps: FlowDeps, job: NotionReembed, error: ValidationFailed) -> dict[str, Any]:
    """The page's content cannot be stored (too many blocks, a chunk past the store's limit):
    a retry would fail the same way, and Cloud Tasks retries anything but a 2xx. Recorded for
    the operator (ids and the reason, never content), acknowledged; the page's chunks stay
    as they were."""
    reason = f"{error.code}: {error}"
    DbRejections(deps.db).record("reembed", f"{job.page_id}@{job.edited_time}", job.org_id, reason)
    log.warning("reembed of Notion page %s failed: %s", job.page_id, error.code)
    return {"page_id": job.page_id, "status": "failed", "error": reason}
