"""The Knowledge Core editor (issue 34 item 2): what a person sees of the org's Knowledge Core
and the documents they write in it, from /overview.

    domains ─► a domain's documents (a page, a substring filter) ─► one document's chunks
    search  ─► the agents' own retrieval (``KnowledgeStore.retrieve``) for a query
    save / seed an exemplar / retire ─► ``KnowledgeStore.sync_in`` (content hash, chunking,
        only changed chunks embedded) and an audit entry, in one transaction

A document from Notion is read-only here (its page is where it changes, and the next sync
would undo an edit); it links to its page. Every other document (written here, approved
agent output, the seed) may be edited or retired by a person of the org; each change is on
the audit log with who made it and what it did to the chunks (never the text). KC-08
exemplars are kept whole (one message each), as approved ones are; other documents are
chunked like a Notion page's text.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, cast

from colony import knowledge
from colony.contracts.knowledge import ExemplarSeed, KcDocumentWrite
from colony.errors import Conflict, NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.knowledge import documents
from colony.knowledge.store import MAX_K, ChunkIn, SyncResult
from colony.knowledge.sync import Source, check_source
from colony.registry import DOMAINS, check_domains
from colony.store.approvals import audit

EDITOR: Source = "editor"
EXEMPLARS = "KC-08"
PAGE = 25
_ID_CHARS = 200


def domains(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The ten domains: name, where their knowledge comes from, and the org's counts."""
    with deps.db.transaction(org_id) as cur:
        counts = documents.domain_counts(cur, org_id)
    return {
        "domains": [
            {
                "domain": d.id,
                "name": d.name,
                "origin": d.origin,
                "documents": counts.get(d.id, (0, 0))[0],
                "chunks": counts.get(d.id, (0, 0))[1],
            }
            for d in DOMAINS.values()
        ]
    }


def listing(
    deps: FlowDeps, org_id: str, domain: str, contains: str | None = None, offset: int = 0
) -> dict[str, Any]:
    """A page of a domain's documents, newest change first, and where the next page starts."""
    [domain] = check_domains([domain])
    if not 0 <= offset <= 1_000_000:
        raise ValidationFailed("offset must be an integer from 0")
    contains = (contains or "").strip()[:200] or None
    with deps.db.transaction(org_id) as cur:
        rows = documents.page(cur, org_id, domain, contains, PAGE + 1, offset)
    more = len(rows) > PAGE
    return {
        "domain": domain,
        "documents": [_summary(r) for r in rows[:PAGE]],
        "next_offset": offset + PAGE if more else None,
    }


def search(deps: FlowDeps, org_id: str, domain: str, query: str, k: int = 5) -> dict[str, Any]:
    """What an agent retrieving ``query`` from ``domain`` would get: its top chunks, most
    similar first (the same statement and embedding the agents use)."""
    [domain] = check_domains([domain])
    query = query.strip()
    if not query:
        raise ValidationFailed("say what to search for (q)")
    if not 1 <= k <= MAX_K:
        raise ValidationFailed(f"k must be an integer in 1..{MAX_K}")
    hits = deps.knowledge.retrieve(org_id, query[:2000], [domain], k)[domain]
    return {
        "domain": domain,
        "model": deps.knowledge.model,
        "results": [
            {
                "source": h.source,
                "source_id": h.source_id,
                "chunk_index": h.chunk_index,
                "title": h.title,
                "content": h.content,
                "tags": h.tags,
                "similarity": round(h.similarity, 4),
            }
            for h in hits
        ],
    }


def document(deps: FlowDeps, org_id: str, source: str, source_id: str) -> dict[str, Any]:
    """One document with its chunks as stored (their hashes and the model that embedded
    them); a Notion page's link. Another org's document is not found."""
    _check_ref(source, source_id)
    with deps.db.transaction(org_id) as cur:
        rows = documents.chunks(cur, org_id, source, source_id)
    if not rows:
        raise NotFound(f"there is no {source} document {source_id!r} in this Knowledge Core")
    return {
        "source": source,
        "source_id": source_id,
        "domain": rows[0]["domain"],
        "title": rows[0]["title"],
        "tags": rows[0]["tags"],
        "editable": source != "notion",
        "notion_url": _notion_url(source_id) if source == "notion" else None,
        "chunks": [
            {
                "chunk_index": r["chunk_index"],
                "content": r["content"],
                "content_hash": r["content_hash"],
                "embedding_model": r["embedding_model"],
                "updated_at": r["updated_at"].isoformat(),
            }
            for r in rows
        ],
    }


def save(
    deps: FlowDeps,
    org_id: str,
    user_id: str,
    write: KcDocumentWrite,
    ref: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Write a new document (``ref`` None: an editor document of its own) or replace the text
    of one that exists and is not Notion's; audited with what it did to the chunks."""
    tags = dict(write.tags)
    pieces = [write.body] if write.domain == EXEMPLARS else knowledge.chunk_text(write.body)
    chunks = [ChunkIn(write.domain, p, title=write.title, tags=tags) for p in pieces]
    source, source_id = ref or (EDITOR, uuid.uuid4().hex)
    action = "kc.edit" if ref else "kc.create"
    return _write(deps, org_id, user_id, action, source, source_id, chunks, must_exist=bool(ref))


def seed_exemplar(deps: FlowDeps, org_id: str, user_id: str, seed: ExemplarSeed) -> dict[str, Any]:
    """A KC-08 exemplar for an angle and tier, tagged as AGT-005's selection reads them."""
    tags: dict[str, str] = {"angle": seed.angle, "tier": seed.tier}
    if seed.step is not None:
        tags["step"] = str(seed.step)
    write = KcDocumentWrite(domain="KC-08", title=seed.title, body=seed.body, tags=tags)
    return save(deps, org_id, user_id, write)


def retire(
    deps: FlowDeps, org_id: str, user_id: str, source: str, source_id: str
) -> dict[str, Any]:
    """Take a document out of the Knowledge Core (its chunks deleted; audited)."""
    return _write(deps, org_id, user_id, "kc.retire", source, source_id, [], must_exist=True)


def _write(
    deps: FlowDeps,
    org_id: str,
    user_id: str,
    action: str,
    source: str,
    source_id: str,
    chunks: list[ChunkIn],
    *,
    must_exist: bool,
) -> dict[str, Any]:
    _check_ref(source, source_id)
    if source == "notion":
        raise Conflict(
            "this document comes from Notion: change it there (the next sync would undo an "
            f"edit here): {_notion_url(source_id)}"
        )
    with deps.db.transaction(org_id) as cur:
        before = documents.chunks(cur, org_id, source, source_id)
        if must_exist and not before:
            raise NotFound(f"there is no {source} document {source_id!r} in this Knowledge Core")
        done = deps.knowledge.sync_in(cur, org_id, cast(Source, source), source_id, chunks)
        domain = chunks[0].domain if chunks else before[0]["domain"]
        detail = _effect(domain, source, source_id, done)
        entry = audit.Entry(
            event="decision", actor=user_id, channel="ui", action=action, detail=detail
        )
        audit.append(cur, org_id, entry)
    return detail


def _effect(domain: str, source: str, source_id: str, done: SyncResult) -> dict[str, Any]:
    return {
        "domain": domain,
        "source": source,
        "source_id": source_id,
        "embedded": done.embedded,
        "unchanged": done.unchanged,
        "deleted": done.deleted,
    }


def _summary(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "source": row["source"],
        "source_id": row["source_id"],
        "title": row["title"],
        "tags": row["tags"],
        "chunks": int(row["chunks"]),
        "updated_at": row["updated_at"].isoformat(),
        "editable": row["source"] != "notion",
    }


def _check_ref(source: str, source_id: str) -> None:
    if not source_id or len(source_id) > _ID_CHARS:
        raise ValidationFailed(f"a document id is 1 to {_ID_CHARS} characters")
    check_source(source, source_id)  # the store's own check of the source


def _notion_url(page_id: str) -> str:
    return f"https://www.notion.so/{page_id.replace('-', '')}"
