"""Knowledge Core tiers: small orgs share one partition, large orgs get one of their own.

Why. PostgreSQL opens every index of a table when it plans a query on it and when it inserts
into it. With ten partial HNSW indexes per org on one ``kc_chunks`` table, one org's query
paid for every other org's indexes: planning a 3-domain retrieval took 0.32 ms at 5 orgs and
97.9 ms at 505 (~0.19 ms per org), and a 10-chunk upsert 3.9 ms and 122.9 ms (issue 16).

The layout (migration 0023). ``kc_chunks`` is LIST-partitioned by ``org_id``:

- ``kc_chunks_shared``, the DEFAULT partition, holds every org below ``THRESHOLD`` chunks.
  It has only btrees; a query walks its org's ``(org_id, domain)`` entries and sorts them by
  true distance. Exact, so it never misses and never under-returns; at a few thousand chunks
  it stays within a few milliseconds (figures below).
- An org past the threshold lives in ``kc_chunks_o_<sha256(org)[:16]>`` with ten partial HNSW
  graphs, one per domain, so a domain's walk only meets rows it may return.

``retrieve_sql`` inlines the org id as a literal, so the planner prunes to one partition at
plan time and opens only that partition's indexes; the store's write statements name the org
too (a parameter: pg8000's unnamed statements are planned with its value). Planning and
writes then cost the same at 10 orgs as at 10,000; what grows is only the number of large
orgs, about one in a thousand.

Moving an org (``promote``), online and in the background (a Cloud Tasks task on
``KC_TIER_QUEUE``, scheduled by a write that finds the org past the threshold; ``colony
org tier`` forces it). Each step is an owner function (DDL) the application role may call
for its own org only:

1. ``colony_kc_stage``: a standalone copy of the org's rows, with the partition's indexes,
   foreign key, RLS policy and a ``CHECK (org_id = ...)`` (so ATTACH need not re-check it).
   Reads and writes go on against the shared partition meanwhile.
2. ``colony_kc_build``: the ten HNSW graphs, on a table no query sees (the long step).
3. ``colony_kc_cutover``: one short transaction. It takes the org's tier lock (every writer
   of the org holds it shared, ``TIER_LOCK``), so no write of the org is half-way; locks the
   shared partition; brings the copy up to date with what changed since step 1 (by id and
   ``updated_at``); deletes the org's shared rows and attaches the copy. A query sees the
   org's rows all shared or all in the partition, never neither. A query planned against the
   old layout while the cutover held the lock reads the shared partition with its own
   snapshot: from before the cutover it finds every row there; from after it finds none, comes
   back short, and ``KnowledgeStore.retrieve`` re-plans the short domains exactly, against the
   new partition. The lock waits are bounded (``lock_timeout``): a cutover that cannot get its
   locks fails and the task is retried; nothing is left half-moved.

Measured (bench/kc_tenants.py at its defaults: 10,000 orgs, 748,787 chunks of 1536-d; the
embedded PostgreSQL 18 on a shared 2-core machine at load average ~9; docs/scale.md):
planning a 3-domain retrieval 0.59 ms for a small org and 0.86 ms for a large one (97.9 ms at
505 orgs before); a 10-chunk upsert 49.8 ms at 10 orgs and 50.4 ms at 10,000 (ratio 1.01);
recall@10 1.0 (small, exact) and 0.993 (large), never fewer than k returned when k exist.
The threshold: an org of 10,000 chunks answered exactly measured p50 45-56 ms on a lighter
machine (187 ms at load ~9), about linear in the rows of the queried domains, so 2,000
chunks keeps the exact worst case near 10 ms; a graph costs ~8 KB per vector (784.6 MB for
ten 10,000-chunk orgs), which a smaller org does not need. The cost of the move is the
cutover's pause of the shared partition: ATTACH scans its heap under an exclusive lock, 1.7 s
at 739,000 shared rows under that load (0.7-1.0 s at 75,000), once per org that outgrows it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from colony.knowledge.indexes import check_org_literal

__all__ = ["THRESHOLD", "Promotion", "check_org_literal", "outgrown", "promote"]
from colony.store.db import Database, fetch_value

# Chunks past which an org moves to its own partition (the module docstring says why).
THRESHOLD = 2_000

# Held shared by every Knowledge Core write of the org for its transaction, exclusively by
# the cutover (``colony_kc_cutover`` computes the same key).
TIER_LOCK = "kc_tier\n{org}"

# Bounded: it counts at most THRESHOLD + 1 entries of the shared btree, and none at all for an
# org that already has its partition.
_OUTGROWN = """
SELECT count(*) FROM (SELECT 1 FROM kc_chunks_shared WHERE org_id = %s LIMIT %s) s
"""
_ATTACHED = "SELECT colony_kc_attached(colony_kc_partition(%s))"
_STAGE = "SELECT colony_kc_stage(%s)"
_BUILD = "SELECT colony_kc_build(%s, %s)"
_CUTOVER = "SELECT colony_kc_cutover(%s, %s)"


@dataclass(frozen=True, slots=True)
class Promotion:
    """What moving an org to its own partition did, and how long each stage took."""

    org_id: str
    moved: bool  # False: it already had its own partition
    copied: int = 0
    caught_up: int = 0  # rows moved by the cutover (the copy's rows plus later writes)
    stage_s: float = 0.0
    build_s: float = 0.0
    cutover_s: float = 0.0


def tier_lock_key(org_id: str) -> str:
    return TIER_LOCK.format(org=check_org_literal(org_id))


def outgrown(cur: Any, org_id: str, threshold: int | None = None) -> bool:
    """Whether the org still shares and holds more than ``threshold`` (default ``THRESHOLD``)
    chunks; ``cur`` is in the org's scope."""
    limit = THRESHOLD if threshold is None else threshold
    return int(fetch_value(cur, _OUTGROWN, (org_id, limit + 1))) > limit


def has_partition(cur: Any, org_id: str) -> bool:
    return bool(fetch_value(cur, _ATTACHED, (check_org_literal(org_id),)))


def promote(
    db: Database,
    org_id: str,
    *,
    maintenance_work_mem: str = "256MB",
    wait_ms: int = 2_000,
) -> Promotion:
    """Move the org into its own partition with HNSW graphs (idempotent; see the module doc);
    an org that no longer exists is not moved.

    Each step is its own transaction under the org's scope; a retry after a failure starts
    again from the copy. ``wait_ms`` bounds each lock wait of the cutover.
    """
    org = check_org_literal(org_id)
    with db.transaction(org) as cur:
        if has_partition(cur, org):
            return Promotion(org, moved=False)
    started = time.perf_counter()
    with db.transaction(org) as cur:
        copied = int(fetch_value(cur, _STAGE, (org,)))
    if copied < 0:  # moved meanwhile, or the org is gone (erased): nothing to move
        return Promotion(org, moved=False)
    staged = time.perf_counter()
    with db.transaction(org) as cur:
        fetch_value(cur, _BUILD, (org, maintenance_work_mem))
    built = time.perf_counter()
    with db.transaction(org) as cur:
        caught_up = int(fetch_value(cur, _CUTOVER, (org, wait_ms)))
    done = time.perf_counter()
    if caught_up < 0:  # a concurrent promotion of the same org finished first
        return Promotion(org, moved=False)
    return Promotion(
        org,
        moved=True,
        copied=max(copied, 0),
        caught_up=caught_up,
        stage_s=staged - started,
        build_s=built - staged,
        cutover_s=done - built,
    )
