"""Knowledge Core at many tenants: retrieval and writes as the number of orgs grows.

Defaults: 10,000 orgs = 9,990 small orgs (20-200 chunks each, most near 20: 20 + 181·u³) and
10 large orgs (10,000 chunks each), clustered 1536-d vectors (``colony.testing.vectors``),
loaded by binary COPY into a scratch database of the embedded PostgreSQL; the large orgs are
then moved to their own partitions by ``tiering.promote`` (the background task's code). A
second scratch database holds only the first 10 small orgs: 10-chunk documents are upserted
into the same orgs in both, alternately, so both see the same machine load.
Retrieval (3 domains, k=10, through ``KnowledgeStore.retrieve``, timed at the client,
planning included) is compared with the exact answer, separately for small and large orgs.
Prints one JSON line. ``--orgs N`` scales it down (one large org per thousand, at least one).

    python bench/kc_tenants.py [--orgs 10000] [--dim 1536] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from colony.knowledge import KnowledgeStore
from colony.knowledge.bulk import BulkChunk, copy_chunks
from colony.knowledge.store import ChunkIn, retrieve_sql
from colony.knowledge.tiering import THRESHOLD, promote
from colony.local import embedded
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_all
from colony.testing.fakes import CountingEmbedder
from colony.testing.vectors import around, cluster_centres, skewed_domains
from colony.vectors import sql_text

MODEL = "synthetic-v1"
TRIPLES = [
    ("KC-01", "KC-04", "KC-08"),
    ("KC-02", "KC-05", "KC-10"),
    ("KC-03", "KC-06", "KC-09"),
    ("KC-01", "KC-07", "KC-10"),
]
_SIZES = """
SELECT coalesce(sum(pg_relation_size(i.indexrelid)) FILTER (WHERE am.amname = 'hnsw'), 0) AS hnsw,
       coalesce(sum(pg_relation_size(i.indexrelid)) FILTER (WHERE am.amname = 'btree'), 0) AS btree,
       (SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits
        WHERE inhparent = 'kc_chunks'::regclass) AS total,
       count(*) FILTER (WHERE am.amname = 'hnsw') AS hnsw_indexes
FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
WHERE i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'kc_chunks'::regclass)
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orgs", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=None, help="default: orgs / 1000, min 1")
    parser.add_argument("--large-chunks", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--queries", type=int, default=200, help="per class (small, large)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--upserts", type=int, default=30)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    if args.large is None:
        args.large = max(1, round(args.orgs / 1000))
    if args.orgs < args.large + 10:
        parser.error("--orgs must leave at least 10 small orgs")
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    base = Settings.from_env()
    with (
        embedded.scratch_database(base, "bench_kct", dim=args.dim) as settings,
        embedded.scratch_database(base, "bench_kct10", dim=args.dim) as ten,
    ):
        run(settings, ten, args)


def org_chunks(
    org: str, n: int, centres: np.ndarray, rng: np.random.Generator
) -> Iterator[BulkChunk]:
    vectors, domains = around(centres, n, rng), skewed_domains(n, rng)
    for i in range(n):
        yield BulkChunk(
            org_id=org,
            domain=str(domains[i]),
            source="seed",
            source_id=f"syn-{i}",
            chunk_index=0,
            content=f"synthetic chunk {i} of {org}",
            content_hash=f"h{i}",
            embedding_model=MODEL,
            embedding=vectors[i],  # a numpy row: bulk encodes it in one buffer
        )


def load(owner, plan: Sequence[tuple[str, int]], centres: np.ndarray, seed: int) -> int:
    """COPY every (org, chunks) of ``plan``, committing every ~50k rows."""
    rng = np.random.default_rng(seed)
    cur = owner.cursor()
    batch: list[BulkChunk] = []
    rows = since_commit = 0
    for n_org, (org, n) in enumerate(plan):
        batch.extend(org_chunks(org, n, centres, rng))
        if len(batch) >= 5_000 or n_org == len(plan) - 1:
            rows += copy_chunks(cur, batch)
            since_commit += len(batch)
            batch = []
            if since_commit >= 50_000:
                owner.commit()
                since_commit = 0
                log(f"  {rows:,} rows")
    owner.commit()
    return rows


def upserts(
    stores: Sequence[KnowledgeStore], orgs: Sequence[str], n: int, tag: str
) -> list[list[float]]:
    """Milliseconds per new 10-chunk document in each store, the stores taking turns (after
    3 untimed rounds)."""
    times: list[list[float]] = [[] for _ in stores]
    for t in range(n + 3):
        org = orgs[t % len(orgs)]
        chunks = [
            ChunkIn(f"KC-{(t + c) % 10 + 1:02d}", f"{tag} document {t} paragraph {c} for {org}")
            for c in range(10)
        ]
        for store, out in zip(stores, times, strict=True):
            started = time.perf_counter()
            store.sync_source(org, "seed", f"bench-{tag}-{t}", chunks)
            if t >= 3:
                out.append((time.perf_counter() - started) * 1000)
    return times


def queries(centres: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    dim = centres.shape[1]
    q = centres[rng.integers(0, len(centres), n)] * np.sqrt(dim) + rng.normal(0, 0.35, (n, dim))
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def retrieval(
    store: KnowledgeStore,
    db: Database,
    orgs: Sequence[str],
    vectors: np.ndarray,
    k: int,
    rng: np.random.Generator,
) -> dict[str, float]:
    ours: list[float] = []
    found = expected = under = 0
    min_full = k  # fewest returned by a domain that holds at least k chunks
    for i, q in enumerate(vectors):
        org = orgs[int(rng.integers(0, len(orgs)))]
        domains = TRIPLES[i % len(TRIPLES)]
        started = time.perf_counter()
        hits = store.retrieve(org, q, domains, k, model=MODEL)
        ours.append((time.perf_counter() - started) * 1000)
        params: list[object] = [sql_text(q)]
        for _ in domains:
            params += [MODEL, k]
        with db.transaction(org) as cur:
            truth = fetch_all(cur, retrieve_sql(org, domains, exact=True), params)
        for domain in domains:
            got = {h.id for h in hits[domain]}
            want = {r["id"] for r in truth if r["domain"] == domain}
            found += len(got & want)
            expected += len(want)
            under += len(got) < len(want)
            if len(want) == k:
                min_full = min(min_full, len(got))
    return {
        "p50_ms": round(statistics.median(ours), 2),
        "p95_ms": round(percentile(ours, 0.95), 2),
        "recall_at_k": round(found / max(expected, 1), 4),
        "min_returned_when_k_held": min_full,
        "under_returns": under,
    }


def planning_ms(db: Database, org: str, q: np.ndarray, k: int) -> float:
    params: list[object] = [sql_text(q)]
    for _ in TRIPLES[0]:
        params += [MODEL, k]
    from colony.knowledge.store import SEARCH_SETTINGS

    times = []
    for _ in range(7):
        with db.transaction(org, settings=SEARCH_SETTINGS) as cur:
            rows = fetch_all(
                cur, "EXPLAIN (ANALYZE, FORMAT JSON) " + retrieve_sql(org, TRIPLES[0]), params
            )
        plan = rows[0]["QUERY PLAN"]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        times.append(float(plan[0]["Planning Time"]))
    return round(statistics.median(times), 3)


def orgs_and_store(
    settings: Settings, orgs: Sequence[str], dim: int
) -> tuple[Any, Database, KnowledgeStore]:
    owner = connect_factory(settings, "owner")()
    owner.autocommit = False
    owner.cursor().execute(
        "INSERT INTO organizations (id, name) SELECT x, x FROM unnest(%s::text[]) x", (list(orgs),)
    )
    owner.commit()
    db = Database(connect_factory(settings, "app"))
    return owner, db, KnowledgeStore(db, CountingEmbedder(dim=dim, model=MODEL))


def run(settings: Settings, ten: Settings, args: argparse.Namespace) -> None:
    began = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    centres = cluster_centres(args.dim, 400, seed=args.seed)
    n_small = args.orgs - args.large
    small = [f"org_s{i:05d}" for i in range(n_small)]
    large = [f"org_l{i:03d}" for i in range(args.large)]
    sizes = (20 + np.floor(181 * rng.random(n_small) ** 3)).astype(int)
    first = list(zip(small[:10], sizes[:10].tolist(), strict=True))
    owner10, db10, store10 = orgs_and_store(ten, small[:10], args.dim)
    log("10 orgs (the second database): loading…")
    load(owner10, first, centres, args.seed + 1)
    owner10.cursor().execute("ANALYZE kc_chunks")
    owner10.commit()
    owner10.close()

    owner, db, store = orgs_and_store(settings, small + large, args.dim)
    cur = owner.cursor()
    total = int(sizes.sum()) + args.large * args.large_chunks
    log(f"{args.orgs:,} orgs: loading {total:,} chunks with binary COPY…")
    started = time.perf_counter()
    plan = first + list(zip(small[10:], sizes[10:].tolist(), strict=True))
    plan += [(org, args.large_chunks) for org in large]
    rows = load(owner, plan, centres, args.seed + 1)
    cur.execute("ANALYZE kc_chunks")
    owner.commit()
    load_s = time.perf_counter() - started

    # The cost the threshold weighs: a large org answered exactly, from the shared partition.
    log("exact retrieval of a large org still in the shared partition…")
    shared_large = retrieval(store, db, large[:1], queries(centres, 20, rng), args.k, rng)

    log(f"moving {len(large)} large org(s) to their own partitions (tiering.promote)…")
    promotions = [promote(db, org, maintenance_work_mem="512MB") for org in large]
    cur.execute("ANALYZE kc_chunks_shared")  # autovacuum reclaims the moved rows later
    owner.commit()

    log("retrieval, small and large orgs…")
    small_stats = retrieval(store, db, small, queries(centres, args.queries, rng), args.k, rng)
    large_stats = retrieval(store, db, large, queries(centres, args.queries, rng), args.k, rng)
    log("upserts: the same 10 orgs at 10 orgs and at every org, taking turns…")
    upsert_10, upsert_n = upserts([store10, store], small[:10], args.upserts, "doc")
    [upsert_n_large] = upserts([store], large, args.upserts, "large")
    db10.close()
    q = queries(centres, 1, rng)[0]
    sizes_row = fetch_all(owner.cursor(), _SIZES)[0]
    owner.close()
    result = {
        "bench": "kc_tenants",
        "orgs": args.orgs,
        "small_orgs": n_small,
        "large_orgs": args.large,
        "chunks": rows,
        "dim": args.dim,
        "k": args.k,
        "domains_per_query": 3,
        "queries_per_class": args.queries,
        "threshold": THRESHOLD,
        "load_s": round(load_s, 1),
        "small": {**small_stats, "planning_ms": planning_ms(db, small[0], q, args.k)},
        "large": {**large_stats, "planning_ms": planning_ms(db, large[0], q, args.k)},
        "large_exact_in_shared": shared_large,
        "upsert_10_orgs_ms": round(statistics.median(upsert_10), 2),
        "upsert_all_orgs_ms": round(statistics.median(upsert_n), 2),
        "upsert_ratio": round(statistics.median(upsert_n) / statistics.median(upsert_10), 3),
        "upsert_10_orgs_p95_ms": round(percentile(upsert_10, 0.95), 2),
        "upsert_all_orgs_p95_ms": round(percentile(upsert_n, 0.95), 2),
        "upsert_large_org_ms": round(statistics.median(upsert_n_large), 2),
        "index_build_s": round(sum(p.build_s for p in promotions), 1),
        "promote_copy_s": round(sum(p.stage_s for p in promotions), 1),
        "cutover_ms_max": round(max(p.cutover_s for p in promotions) * 1000, 1),
        "hnsw_indexes": int(sizes_row["hnsw_indexes"]),
        "hnsw_index_mb": round(int(sizes_row["hnsw"]) / 2**20, 1),
        "btree_index_mb": round(int(sizes_row["btree"]) / 2**20, 1),
        "kc_chunks_total_mb": round(int(sizes_row["total"]) / 2**20, 1),
        "wall_s": round(time.perf_counter() - began, 1),
        # the machine is shared: its 1/5/15-minute load (2 cores) when the run ended
        "loadavg": [round(x, 1) for x in os.getloadavg()],
    }
    db.close()
    print(json.dumps(result))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
