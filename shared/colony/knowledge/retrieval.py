"""The Knowledge Core's retrieval statements (pure: text only; ``KnowledgeStore`` runs them).

One branch per requested domain with the org and the domain as literals (validated), so
each branch prunes to the org's partition and, in an org's own partition, can use the
domain's partial HNSW index (``colony.knowledge.tiering``); raw ``<=>`` ascending with a
LIMIT in the inner query, similarity computed outside it. AGT-005's grounding adds its KC-08
picks (``colony.knowledge.outcomes``) to the same statement.
"""

from __future__ import annotations

from collections.abc import Sequence

from colony.knowledge import outcomes
from colony.knowledge.indexes import check_org_literal
from colony.registry import check_domains

_BRANCH = """(SELECT id, domain, source, source_id, chunk_index, title, content, tags,
        tableoid = 'kc_chunks_shared'::regclass AS shared,
        embedding <=> (SELECT v FROM q) AS distance
 FROM kc_chunks
 WHERE org_id = '{org}' AND domain = '{domain}' AND embedding_model = %s
 ORDER BY embedding <=> (SELECT v FROM q)
 LIMIT %s)"""
# The exact fallback: `+ 0` makes the sort key an expression no vector index can serve, so
# the rows come from the (org, domain) btree and are sorted by true distance. The shared
# partition has no vector index, so there both forms are exact.
_EXACT_BRANCH = _BRANCH.replace(
    "ORDER BY embedding <=> (SELECT v FROM q)", "ORDER BY (embedding <=> (SELECT v FROM q)) + 0"
)
_RETRIEVE = """WITH q AS MATERIALIZED (SELECT %s::vector AS v)
SELECT id, domain, source, source_id, chunk_index, title, content, tags, shared,
       1 - distance AS similarity
FROM (
{branches}
) hits
ORDER BY domain, distance"""


# AGT-005's grounding in one round trip: the KC-08 picks (``knowledge.outcomes``) and the
# other domains' hits share the query vector and the statement; ``part`` says which is which.
_PICKS_AND_RETRIEVE = """WITH q AS MATERIALIZED (SELECT %s::vector AS v),
{picks}
SELECT 'pick' AS part, id, 'KC-08' AS domain, NULL AS source, NULL AS source_id,
       NULL::integer AS chunk_index, title, content, tags, NULL::boolean AS shared,
       similarity, selected_by, pick_order AS rank
FROM picks
UNION ALL
SELECT 'hit', id, domain, source, source_id, chunk_index, title, content, tags, shared,
       1 - distance, NULL, NULL
FROM (
{branches}
) hits
ORDER BY part DESC, rank, domain, similarity DESC"""


def _branches(org_id: str, domains: Sequence[str], exact: bool) -> str:
    org = check_org_literal(org_id)
    branch = _EXACT_BRANCH if exact else _BRANCH
    return "\nUNION ALL\n".join(branch.format(org=org, domain=d) for d in check_domains(domains))


def retrieve_sql(org_id: str, domains: Sequence[str], *, exact: bool = False) -> str:
    """The one-round-trip query for ``domains`` of ``org_id`` (pure; both are validated)."""
    return _RETRIEVE.format(branches=_branches(org_id, domains, exact))


def exemplars_sql(org_id: str, domains: Sequence[str]) -> str:
    """AGT-005's grounding for ``org_id`` as one statement: the KC-08 picks and the graph
    walks of ``domains`` (pure; validated)."""
    return _PICKS_AND_RETRIEVE.format(
        picks=outcomes.picks_sql(org_id), branches=_branches(org_id, domains, False)
    )
