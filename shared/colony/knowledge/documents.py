"""The Knowledge Core as documents a person reads (issue 34 item 2): each domain's documents
and their size, a page of a domain's documents, and one document's chunks as stored.

A document is what one source wrote: its chunks share ``(source, source_id)``. Every
statement names the org as well as RLS scoping the transaction, so it reads only the org's
partition (``colony.knowledge.tiering``). Writing stays ``KnowledgeStore.sync_in``'s.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_all

MAX_PAGE = 100

_DOMAINS = """
SELECT domain, count(DISTINCT (source, source_id)) AS documents, count(*) AS chunks
FROM kc_chunks WHERE org_id = %s GROUP BY domain
"""
# A document's title is its first chunk's; it was changed when its newest chunk was. The
# filter is a plain substring match over titles and text (the search beside it is the
# agents' own retrieval).
_PAGE = """
SELECT source, source_id,
       (array_agg(title ORDER BY chunk_index))[1] AS title,
       (array_agg(tags ORDER BY chunk_index))[1] AS tags,
       count(*) AS chunks, max(updated_at) AS updated_at
FROM kc_chunks
WHERE org_id = %s AND domain = %s
GROUP BY source, source_id
HAVING %s::text IS NULL
    OR bool_or(strpos(lower(coalesce(title, '')), %s) > 0 OR strpos(lower(content), %s) > 0)
ORDER BY max(updated_at) DESC, source, source_id
LIMIT %s OFFSET %s
"""
_CHUNKS = """
SELECT domain, chunk_index, title, content, content_hash, tags, embedding_model, updated_at
FROM kc_chunks
WHERE org_id = %s AND source = %s AND source_id = %s
ORDER BY chunk_index
"""


def domain_counts(cur: Any, org_id: str) -> dict[str, tuple[int, int]]:
    """Each domain the org has chunks in: (documents, chunks)."""
    rows = fetch_all(cur, _DOMAINS, (org_id,))
    return {r["domain"]: (int(r["documents"]), int(r["chunks"])) for r in rows}


def page(
    cur: Any, org_id: str, domain: str, contains: str | None, limit: int, offset: int
) -> list[Row]:
    """A page of ``domain``'s documents, newest change first; with ``contains``, only those
    whose title or text holds it (case-insensitive)."""
    needle = contains.lower() if contains else None
    params = (org_id, domain, needle, needle, needle, limit, offset)
    return fetch_all(cur, _PAGE, params)


def chunks(cur: Any, org_id: str, source: str, source_id: str) -> list[Row]:
    """One document's chunks in order; empty when the org has no such document."""
    return fetch_all(cur, _CHUNKS, (org_id, source, source_id))
