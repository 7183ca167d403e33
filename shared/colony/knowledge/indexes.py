"""Org ids as SQL literals, and where an org's Knowledge Core partition and graphs are named.

``retrieve_sql`` inlines the org id and domain as literals so that the planner prunes
``kc_chunks`` to the org's partition and picks the domain's partial HNSW index there (see
``colony.knowledge.tiering``); both are validated first (domains against the registry, org
ids against ``ORG_ID``). Row-level security still scopes the same query, so a wrong literal
can only return nothing.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from colony.errors import OrgScopeError
from colony.registry import DOMAINS

ORG_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")

# The org's partition and its graphs, whether attached or staged (erasure checks none is
# left; ``colony_drop_org_indexes`` drops the partition as its owner).
_ORG_RELATIONS = """
SELECT c.relname AS name FROM pg_class c
WHERE c.relname = %s AND c.relnamespace = 'public'::regnamespace
UNION ALL
SELECT ic.relname FROM pg_class c JOIN pg_index i ON i.indrelid = c.oid
JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE c.relname = %s AND c.relnamespace = 'public'::regnamespace
"""


def check_org_literal(org_id: str) -> str:
    """An org id safe to inline as a SQL literal (Clerk ids are ``org_`` + base62)."""
    if not isinstance(org_id, str) or not ORG_ID.fullmatch(org_id):
        raise OrgScopeError(f"org id {org_id!r} is not a valid org identifier")
    return org_id


def partition_name(org_id: str) -> str:
    """The org's own ``kc_chunks`` partition (mirrors SQL ``colony_kc_partition``)."""
    digest = hashlib.sha256(check_org_literal(org_id).encode()).hexdigest()[:16]
    return f"kc_chunks_o_{digest}"


def index_name(org_id: str, domain: str) -> str:
    """The HNSW graph of one domain in the org's own partition."""
    if domain not in DOMAINS:
        raise OrgScopeError(f"unknown domain {domain!r}")
    return f"{partition_name(org_id)}_hnsw_{domain[-2:]}"


def existing_org_indexes(cur: Any, org_id: str) -> list[str]:
    """The org's own partition and its indexes that exist now (empty for a shared org)."""
    part = partition_name(org_id)
    cur.execute(_ORG_RELATIONS, (part, part))
    return sorted(str(row[0]) for row in cur.fetchall())
