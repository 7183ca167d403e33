"""What ``halfvec`` HNSW graphs cost in recall, and what they save in index memory.

The next step after read replicas (docs/scale.md): graphs over ``embedding::halfvec(dim)``
(2 bytes a dimension instead of 4) beside today's ``vector`` graphs, in one large org's own
partition. One org of N chunks (default 20,000: twice the issue's large org) with skewed
domain sizes and clustered 1536-d vectors (``colony.testing.vectors``), moved to its own
partition by ``tiering.promote`` (today's float graphs), then ten per-domain halfvec graphs
built beside them. The same 3-domain queries (k=10) run, in turns, over the float graphs,
over the halfvec graphs, and over the halfvec graphs asking for 2k candidates re-ranked by
the exact float distance; each is compared with the exact float answer. Prints one JSON line.

    python bench/kc_halfvec.py [--rows 20000] [--dim 1536] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from colony.knowledge.bulk import bulk_load
from colony.knowledge.indexes import partition_name
from colony.knowledge.store import SEARCH_SETTINGS, retrieve_sql
from colony.knowledge.tiering import promote
from colony.local import embedded
from colony.registry import DOMAINS
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_all
from colony.testing.vectors import clustered_corpus
from colony.vectors import sql_text

TRIPLES = [
    ("KC-01", "KC-04", "KC-08"),
    ("KC-02", "KC-05", "KC-10"),
    ("KC-03", "KC-06", "KC-09"),
    ("KC-01", "KC-07", "KC-10"),
]
# One branch per domain, as the store's query (colony.knowledge.store), ordered by the halfvec
# distance so the halfvec graph serves it; ``{limit}`` candidates, then the best k of them by
# ``{rank}`` (the halfvec distance itself, or the exact float distance: a re-rank).
_HALF_BRANCH = """(SELECT id, domain FROM (
    SELECT id, domain, embedding FROM kc_chunks
    WHERE org_id = '{org}' AND domain = '{domain}' AND embedding_model = %s
    ORDER BY embedding::halfvec({dim}) <=> (SELECT v FROM q)::halfvec({dim})
    LIMIT {limit}) c
 ORDER BY {rank} LIMIT %s)"""
_HALF_RANKS = {
    "halfvec": "embedding::halfvec({dim}) <=> (SELECT v FROM q)::halfvec({dim})",
    "halfvec_rerank": "embedding <=> (SELECT v FROM q)",
}
_SIZES = """
SELECT coalesce(sum(pg_relation_size(indexrelid)) FILTER (WHERE pg_get_indexdef(indexrelid)
                LIKE '%%halfvec_cosine_ops%%'), 0) AS halfvec,
       coalesce(sum(pg_relation_size(indexrelid)) FILTER (WHERE pg_get_indexdef(indexrelid)
                LIKE '%%vector_cosine_ops%%'), 0) AS vector
FROM pg_index WHERE indrelid = %s::regclass
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def half_sql(org: str, domains: Sequence[str], dim: int, k: int, mode: str) -> str:
    limit = 2 * k if mode == "halfvec_rerank" else k
    rank = _HALF_RANKS[mode].format(dim=dim)
    parts = (
        _HALF_BRANCH.format(org=org, domain=d, dim=dim, limit=limit, rank=rank) for d in domains
    )
    return "WITH q AS MATERIALIZED (SELECT %s::vector AS v)\n" + "\nUNION ALL\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    with embedded.scratch_database(Settings.from_env(), "bench_kch", dim=args.dim) as settings:
        run(settings, args)


def run(settings: Settings, args: argparse.Namespace) -> None:
    began = time.perf_counter()
    owner = connect_factory(settings, "owner")()
    corpus = clustered_corpus(args.rows, args.dim, orgs=1, clusters=400, seed=11)
    [org] = sorted(set(corpus.orgs.tolist()))
    owner.cursor().execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    owner.commit()
    log(f"loading {args.rows:,} chunks of one org, moving it to its own partition…")
    rows, _, _ = bulk_load(owner, corpus.chunks(10_000))
    db = Database(connect_factory(settings, "app"))
    started = time.perf_counter()
    promote(db, org, maintenance_work_mem="1GB")
    vector_build_s = time.perf_counter() - started
    part = partition_name(org)
    log("building the halfvec graphs beside the float ones…")
    cur = owner.cursor()
    cur.execute("SET maintenance_work_mem = '1GB'")
    started = time.perf_counter()
    for n, domain in enumerate(DOMAINS, start=1):
        cur.execute(
            f"CREATE INDEX {part}_half_{n:02d} ON {part} USING hnsw"
            f" ((embedding::halfvec({args.dim})) halfvec_cosine_ops) WHERE domain = '{domain}'"
        )
    owner.commit()
    half_build_s = time.perf_counter() - started
    owner.autocommit = True
    cur.execute(f"VACUUM ANALYZE {part}")
    sizes = fetch_all(cur, _SIZES, (part,))[0]

    # The halfvec query must be served by the halfvec graphs, or its recall says nothing.
    probe: list[Any] = [sql_text(corpus.queries(1, seed=4)[0]), corpus.model, args.k]
    with db.transaction(org, settings=SEARCH_SETTINGS) as tx:
        plan = fetch_all(
            tx, "EXPLAIN " + half_sql(org, ["KC-01"], args.dim, args.k, "halfvec"), probe
        )
    uses_graph = any(f"{part}_half_01" in str(r["QUERY PLAN"]) for r in plan)

    modes = ("vector", "halfvec", "halfvec_rerank")
    times: dict[str, list[float]] = {m: [] for m in modes}
    found = dict.fromkeys(modes, 0)
    expected = 0
    for i, q in enumerate(corpus.queries(args.queries, seed=5)):
        domains = TRIPLES[i % len(TRIPLES)]
        params: list[Any] = [sql_text(q)]
        for _ in domains:
            params += [corpus.model, args.k]
        with db.transaction(org) as tx:
            truth = fetch_all(tx, retrieve_sql(org, domains, exact=True), params)
        want = {(r["domain"], r["id"]) for r in truth}
        expected += len(want)
        for mode in modes if i % 2 else reversed(modes):  # in turns: the same machine load
            sql = (
                retrieve_sql(org, domains)
                if mode == "vector"
                else half_sql(org, domains, args.dim, args.k, mode)
            )
            started = time.perf_counter()
            with db.transaction(org, settings=SEARCH_SETTINGS) as tx:
                got = {(r["domain"], r["id"]) for r in fetch_all(tx, sql, params)}
            times[mode].append((time.perf_counter() - started) * 1000)
            found[mode] += len(got & want)
    db.close()
    owner.close()
    result: dict[str, Any] = {
        "bench": "kc_halfvec",
        "rows": rows,
        "dim": args.dim,
        "k": args.k,
        "domains_per_query": 3,
        "queries": args.queries,
        "ef_search": int(SEARCH_SETTINGS["hnsw.ef_search"]),
        "halfvec_plan_uses_graph": uses_graph,
    }
    for mode in modes:
        result[mode] = {
            "recall_at_k": round(found[mode] / max(expected, 1), 4),
            "p50_ms": round(statistics.median(times[mode]), 2),
            "p95_ms": round(percentile(times[mode], 0.95), 2),
        }
    result |= {
        "vector_index_mb": round(int(sizes["vector"]) / 2**20, 1),
        "halfvec_index_mb": round(int(sizes["halfvec"]) / 2**20, 1),
        "index_ratio": round(int(sizes["halfvec"]) / max(int(sizes["vector"]), 1), 3),
        "vector_build_s": round(vector_build_s, 1),  # includes the copy into the partition
        "halfvec_build_s": round(half_build_s, 1),
        "wall_s": round(time.perf_counter() - began, 1),
        "loadavg": [round(x, 1) for x in os.getloadavg()],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
