"""Writing one source document's chunks into the Knowledge Core (ENT-007): its stored chunks
made equal to the chunks it has now, in the caller's transaction.

Only chunks whose content hash changed (or that another model embedded) are embedded again;
a chunk that only moved (a paragraph inserted above it) keeps its stored vector; a change of
domain, title or tags alone is applied without an embedding call; chunks past the new end
are deleted. Syncs of one document take turns, under the org's tier lock
(``colony.knowledge.tiering``). ``KnowledgeStore`` (``sync_source``, ``sync_in``,
``delete_source``) is the way in; reading is its own (``colony.knowledge.store``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from colony.errors import ValidationFailed
from colony.knowledge import tiering
from colony.registry import check_domains
from colony.store.db import fetch_all
from colony.vectors import sql_text

# Where a document comes from: a Notion page, approved agent output, the demo's seed, or a
# person writing in the Knowledge Core editor (``flows.knowledge.kc_editor``).
Source = Literal["notion", "approval", "seed", "editor"]
SOURCES: tuple[str, ...] = ("notion", "approval", "seed", "editor")
MAX_CHUNK_CHARS = 20_000

_EXISTING = """
SELECT chunk_index, content_hash, embedding_model FROM kc_chunks
WHERE org_id = %s AND source = %s AND source_id = %s
"""
_UPSERT = """
INSERT INTO kc_chunks (org_id, domain, source, source_id, chunk_index, title, content,
                       content_hash, tags, embedding_model, embedding)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s::vector)
ON CONFLICT (org_id, source, source_id, chunk_index) DO UPDATE SET
    domain = EXCLUDED.domain, title = EXCLUDED.title, content = EXCLUDED.content,
    content_hash = EXCLUDED.content_hash, tags = EXCLUDED.tags,
    embedding_model = EXCLUDED.embedding_model, embedding = EXCLUDED.embedding,
    updated_at = now()
"""
_VECTORS = """
SELECT DISTINCT ON (content_hash) content_hash, embedding::text AS embedding FROM kc_chunks
WHERE org_id = %s AND source = %s AND source_id = %s AND content_hash = ANY(%s)
  AND embedding_model = %s
"""
_RETAG = """
UPDATE kc_chunks SET domain = %s, title = %s, tags = %s::jsonb, updated_at = now()
WHERE org_id = %s AND source = %s AND source_id = %s AND chunk_index = %s
  AND (domain, title, tags) IS DISTINCT FROM (%s, %s, %s::jsonb)
"""
# Syncs of one source document take turns (held until their transaction ends): two re-embed
# tasks for one page (one per edit time) may run at once, and each decides what changed from
# what it read, so without this the page could end as a mix of both versions. The org's tier
# lock, held shared first, keeps the org's move to its own partition from starting half-way
# through a write (``colony.knowledge.tiering``).
_LOCK_SOURCE = (
    "SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0)),"
    " pg_advisory_xact_lock(hashtextextended(%s, 0))"
)
_DELETE_FROM = (
    "DELETE FROM kc_chunks WHERE org_id = %s AND source = %s AND source_id = %s"
    " AND chunk_index >= %s"
)
_DELETE_SOURCE = "DELETE FROM kc_chunks WHERE org_id = %s AND source = %s AND source_id = %s"


def content_hash(text: str) -> str:
    """The SHA-256 of ``text``: a chunk is embedded again only when this changes."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ChunkIn:
    """One chunk of a source document, as it should be stored."""

    domain: str
    content: str
    title: str | None = None
    tags: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What syncing a document's chunks did: embedded, unchanged, deleted, and whether the org
    outgrew the shared partition."""

    embedded: int
    unchanged: int
    deleted: int
    outgrown: bool = False  # the org passed the tiering threshold: schedule its move


# Texts → their vectors, in order, checked against the store's model and dimension.
Embed = Callable[[Sequence[str]], list[list[float]]]


def sync_chunks(
    cur: Any,
    org_id: str,
    source: Source,
    source_id: str,
    chunks: Sequence[ChunkIn],
    *,
    model: str,
    embed: Embed,
) -> SyncResult:
    """Make the stored chunks of ``source``:``source_id`` equal ``chunks`` through ``cur``
    (a transaction scoped to ``org_id``), embedding with ``embed`` what ``model`` has not
    embedded as it reads now. An empty ``chunks`` removes the source."""
    check_source(source, source_id)
    for i, chunk in enumerate(chunks):
        check_domains([chunk.domain])
        if not chunk.content.strip():
            raise ValidationFailed(f"chunk #{i} of {source}:{source_id!r} is empty")
        if len(chunk.content) > MAX_CHUNK_CHARS:
            raise ValidationFailed(
                f"chunk #{i} of {source}:{source_id!r} has {len(chunk.content)} characters;"
                f" the limit is {MAX_CHUNK_CHARS}"
            )
    hashes = [content_hash(c.content) for c in chunks]
    _lock(cur, org_id, source, source_id)
    existing = {
        r["chunk_index"]: (r["content_hash"], r["embedding_model"])
        for r in fetch_all(cur, _EXISTING, (org_id, source, source_id))
    }
    stale = [i for i, h in enumerate(hashes) if existing.get(i) != (h, model)]
    # A chunk that only moved (a paragraph inserted above it) keeps its stored vector.
    moved = {h for i, h in enumerate(hashes) if i in stale} & {
        h for h, made_by in existing.values() if made_by == model
    }
    known = {
        r["content_hash"]: r["embedding"]
        for r in (
            fetch_all(
                cur,
                _VECTORS,
                (org_id, source, source_id, sorted(moved), model),
            )
            if moved
            else []
        )
    }
    fresh = [i for i in stale if hashes[i] not in known]
    embedded = embed([chunks[i].content for i in fresh]) if fresh else None
    vectors = {i: known[hashes[i]] for i in stale if hashes[i] in known}
    vectors.update({i: sql_text(embedded[row]) for row, i in enumerate(fresh)} if embedded else {})
    for i in stale:
        chunk = chunks[i]
        cur.execute(
            _UPSERT,
            (
                org_id,
                chunk.domain,
                source,
                source_id,
                i,
                chunk.title,
                chunk.content,
                hashes[i],
                json.dumps(dict(chunk.tags), sort_keys=True),
                model,
                vectors[i],
            ),
        )
    for i in set(range(len(chunks))) - set(stale):
        chunk = chunks[i]
        tags = json.dumps(dict(chunk.tags), sort_keys=True)
        cur.execute(
            _RETAG,
            (
                chunk.domain,
                chunk.title,
                tags,
                org_id,
                source,
                source_id,
                i,
                chunk.domain,
                chunk.title,
                tags,
            ),
        )
    cur.execute(_DELETE_FROM, (org_id, source, source_id, len(chunks)))
    deleted = max(cur.rowcount, 0)
    # Only a write that added chunks can carry the org past the threshold.
    grew = len(chunks) > len(existing)
    return SyncResult(
        embedded=len(fresh),
        unchanged=len(chunks) - len(fresh),
        deleted=deleted,
        outgrown=grew and tiering.outgrown(cur, org_id),
    )


def delete_chunks(cur: Any, org_id: str, source: Source, source_id: str) -> int:
    """Delete every chunk of ``source``:``source_id`` through ``cur``; how many went.
    ``source`` and ``source_id`` are the caller's to check first (``check_source``)."""
    _lock(cur, org_id, source, source_id)
    cur.execute(_DELETE_SOURCE, (org_id, source, source_id))
    return max(cur.rowcount, 0)


def _lock(cur: Any, org_id: str, source: str, source_id: str) -> None:
    source_key = f"kc_chunks\n{org_id}\n{source}\n{source_id}"
    cur.execute(_LOCK_SOURCE, (tiering.tier_lock_key(org_id), source_key))


def check_source(source: str, source_id: str) -> None:
    """Refuse an unknown source or an empty source id (``ValidationFailed``)."""
    if source not in SOURCES:
        raise ValidationFailed(f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")
    if not isinstance(source_id, str) or not source_id.strip():
        raise ValidationFailed("source_id must be a non-empty string")
