"""Knowledge Core retrieval benchmark: filtered HNSW vs the exact baseline, side by side.

Builds N chunks (default 100,000) over 5 orgs × 10 domains with skewed domain sizes (30% down
to 1%), clustered 1536-d vectors, loaded with binary COPY into a scratch database of the
embedded PostgreSQL; moves each org to its own partition with per-domain HNSW graphs
(``tiering.promote``, what the background task runs; build time includes the copy); then
runs 3-domain queries
(k=10 per domain, one org) through ``KnowledgeStore.retrieve`` and through the exact
baseline (btree on org and domain, exact distance sort, no vector index), alternating so
both see the same machine load.
Prints one JSON line.

    python bench/kc_retrieval.py [--rows 100000] [--dim 1536] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from colony.knowledge import KnowledgeStore
from colony.knowledge.bulk import bulk_load
from colony.knowledge.store import retrieve_sql
from colony.knowledge.tiering import promote
from colony.local import embedded
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_all
from colony.testing.fakes import CountingEmbedder
from colony.testing.vectors import clustered_corpus
from colony.vectors import sql_text

TRIPLES = [
    ("KC-01", "KC-04", "KC-08"),
    ("KC-02", "KC-05", "KC-10"),
    ("KC-03", "KC-06", "KC-09"),
    ("KC-01", "KC-07", "KC-10"),
]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")

    with embedded.scratch_database(Settings.from_env(), "bench_kc", dim=args.dim) as settings:
        run(settings, args)


def run(settings: Settings, args: argparse.Namespace) -> None:
    owner = connect_factory(settings, "owner")()
    log(f"generating {args.rows:,} clustered {args.dim}-d vectors…")
    corpus = clustered_corpus(args.rows, args.dim, orgs=5, clusters=400, seed=11)
    orgs = sorted(set(corpus.orgs.tolist()))
    cur = owner.cursor()
    for org in orgs:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    owner.commit()
    log("loading with binary COPY, then building the HNSW indexes…")
    rows, load_s, _ = bulk_load(owner, corpus.chunks(10_000))
    db = Database(connect_factory(settings, "app"))
    started = time.perf_counter()
    for org in orgs:
        promote(db, org, maintenance_work_mem="1GB")
    build_s = time.perf_counter() - started
    owner.autocommit = True
    owner.cursor().execute("VACUUM ANALYZE kc_chunks")  # the moved rows' dead copies
    owner.close()
    log(f"loaded {rows:,} rows in {load_s:.1f}s, moved and indexed in {build_s:.1f}s")

    store = KnowledgeStore(db, CountingEmbedder(dim=args.dim, model=corpus.model))
    queries = corpus.queries(args.queries, seed=5)
    ours: list[float] = []
    exact: list[float] = []
    found = expected = 0
    min_returned = args.k * 10
    for i, q in enumerate(queries):
        org, domains = orgs[i % len(orgs)], TRIPLES[i % len(TRIPLES)]
        params = [sql_text(q)]
        for _ in domains:
            params += [corpus.model, args.k]
        started = time.perf_counter()
        hits = store.retrieve(org, q, domains, args.k, model=corpus.model)
        ours.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        # exact=True orders by an expression no vector index can serve: the planner reads the
        # (org, domain) rows through the btree and sorts them by true distance.
        with db.transaction(org) as cur:
            truth = fetch_all(cur, retrieve_sql(org, domains, exact=True), params)
        exact.append((time.perf_counter() - started) * 1000)
        for domain in domains:
            got = {h.id for h in hits[domain]}
            want = {r["id"] for r in truth if r["domain"] == domain}
            found += len(got & want)
            expected += len(want)
            min_returned = min(min_returned, len(got))
        if (i + 1) % 50 == 0:
            log(f"  {i + 1}/{len(queries)} queries")
    db.close()
    p50, p50_exact = statistics.median(ours), statistics.median(exact)
    print(
        json.dumps(
            {
                "bench": "kc_retrieval",
                "rows": rows,
                "dim": args.dim,
                "queries": len(queries),
                "k": args.k,
                "domains_per_query": 3,
                "load_s": round(load_s, 2),
                "build_s": round(build_s, 2),
                "p50_ms": round(p50, 2),
                "p95_ms": round(percentile(ours, 0.95), 2),
                "exact_p50_ms": round(p50_exact, 2),
                "exact_p95_ms": round(percentile(exact, 0.95), 2),
                "ratio_p50": round(p50 / p50_exact, 3),
                "recall_at_k": round(found / expected, 4),
                "min_returned_per_org_domain": min_returned,
            }
        )
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
