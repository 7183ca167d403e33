"""KC-08 exemplar selection benchmark (issue 19 item 3): angle, outcome, and what it costs.

A synthetic org with N approved messages (default 2,000) over 8 angles of uneven size (one
with only 2, to exercise the fallback), 3 tiers and recorded outcomes (replied positive /
unknown / negative, delivered, bounced, none), plus KC-04 and KC-07 chunks; vectors clustered
by angle. Loaded with binary COPY into a scratch database of the embedded PostgreSQL.

For each query (a random angle, tier and vector), assembly for AGT-005 is run twice side by
side, alternating which goes first, both from the same query vector:
- without: one similarity retrieval over KC-08, KC-04, KC-07 (2 each), then ``assemble``;
- with: ``KnowledgeStore.exemplars`` (the one-query selection, then the retrieval over KC-04
  and KC-07 in the same transaction), then ``assemble``.
Measured with the org on the shared partition, then again after it moved to its own
(``tiering.promote``). Checked against the data: three in the angle whenever it holds ≥ 3,
the best outcome first, the fallback marked. Prints one JSON line.

    python bench/exemplars.py [--messages 2000] [--dim 1536] [--queries 300]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from colony.context.assembler import AssemblyRequest, assemble
from colony.contracts import OrgContext
from colony.knowledge import KnowledgeStore, outcomes
from colony.knowledge.bulk import BulkChunk, bulk_load
from colony.knowledge.exemplars import picked_exemplars, to_exemplars
from colony.knowledge.tiering import promote
from colony.llm.agent_call import llm_from_settings
from colony.local import embedded
from colony.settings import Settings
from colony.store import Database, connect_factory
from colony.testing.fakes import CountingEmbedder

ORG = "org_bench_exemplars"
MODEL = "bench-clustered-v1"
# angle → share of the messages (the last has exactly 2: fewer than three, so it falls back)
ANGLES = {
    "Signal": 0.24,
    "Pain": 0.18,
    "Insight": 0.16,
    "Referral": 0.12,
    "PatternBreak": 0.12,
    "Expansion": 0.10,
    "Leadership": 0.08,
    "Niche": 0.0,
}
NICHE = 2
TIERS = ("T1", "T2", "T3")
FATES = {
    "replied_positive": 0.06,
    "replied_unknown": 0.04,
    "replied_negative": 0.05,
    "delivered": 0.55,
    "bounced": 0.08,
    None: 0.22,
}
REPLIED = {"replied_positive", "replied_unknown"}
OTHER_DOMAINS = ("KC-04", "KC-07")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def unit(v: np.ndarray) -> list[float]:
    return (v / np.linalg.norm(v)).astype(np.float32).tolist()


def corpus(n: int, dim: int, seed: int) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    centres = {a: rng.normal(size=dim) for a in ANGLES}
    sizes = {a: int(n * share) for a, share in ANGLES.items()}
    sizes["Niche"] = NICHE
    sizes["Signal"] += n - sum(sizes.values())
    fates, weights = list(FATES), list(FATES.values())
    rows = []
    for angle, size in sizes.items():
        for i in range(size):
            fate = pick.choices(fates, weights)[0]
            rows.append(
                {
                    "id": f"msg-{angle}-{i}",
                    "angle": angle,
                    "tier": pick.choice(TIERS),
                    "outcome": fate,
                    "vector": unit(centres[angle] + rng.normal(scale=0.9, size=dim)),
                    "text": f"Subject: {angle} note {i}\n\nHi there, a {angle.lower()} thought.",
                }
            )
    return rows, centres


def load(settings: Settings, rows: list[dict[str, Any]], dim: int, seed: int) -> int:
    rng = np.random.default_rng(seed + 1)
    owner = connect_factory(settings, "owner")()
    cur = owner.cursor()
    cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Bench')", (ORG,))
    owner.commit()

    def chunk(domain: str, source_id: str, text: str, vector: list[float]) -> BulkChunk:
        digest = hashlib.sha256(text.encode()).hexdigest()
        return BulkChunk(ORG, domain, "seed", source_id, 0, text, digest, MODEL, vector)

    batch = [chunk("KC-08", r["id"], r["text"], r["vector"]) for r in rows]
    for domain in OTHER_DOMAINS:
        batch += [
            chunk(domain, f"{domain}-{i}", f"{domain} guidance {i}", unit(rng.normal(size=dim)))
            for i in range(200)
        ]
    loaded, _, _ = bulk_load(owner, [batch])
    tags = [
        json.dumps(
            {"angle": r["angle"], "tier": r["tier"], "step": "1"}
            | ({"outcome": r["outcome"]} if r["outcome"] else {})
        )
        for r in rows
    ]
    cur.execute(
        "UPDATE kc_chunks c SET tags = t.tags::jsonb, title = t.sid"
        " FROM unnest(%s::text[], %s::text[]) AS t(sid, tags)"
        " WHERE c.org_id = %s AND c.source_id = t.sid",
        ([r["id"] for r in rows], tags, ORG),
    )
    cur.execute("ANALYZE kc_chunks")
    owner.commit()
    owner.close()
    return loaded


@dataclass(frozen=True)
class Query:
    vector: list[float]
    angle: str
    tier: str
    task: dict[str, Any]


def with_step(store: KnowledgeStore, llm: Any, org: OrgContext, contact: dict, q: Query) -> list:
    """AGT-005's grounding as ``colony.flows.campaigns.specialist.grounding`` builds it,
    assembled."""
    picked, hits = store.exemplars(
        ORG, q.vector, angle=q.angle, tier=q.tier, domains=OTHER_DOMAINS, k_per_domain=2
    )
    exemplars = picked_exemplars(picked) + to_exemplars(hits)
    entities = {"contact": contact}
    request = AssemblyRequest("AGT-005", ORG, "bench", org, exemplars, entities, (), q.task)
    assemble(request, budgets=llm.budgets, counter=llm.counter)
    return picked


def without_step(store: KnowledgeStore, llm: Any, org: OrgContext, contact: dict, q: Query) -> None:
    """The grounding before the exemplar step: KC-08 by similarity alone, 2 per domain."""
    hits = store.retrieve(ORG, q.vector, ("KC-08", *OTHER_DOMAINS), 2, model=MODEL)
    entities = {"contact": contact}
    request = AssemblyRequest(
        "AGT-005", ORG, "bench", org, to_exemplars(hits), entities, (), q.task
    )
    assemble(request, budgets=llm.budgets, counter=llm.counter)


def measure(
    store: KnowledgeStore,
    llm: Any,
    rows: list[dict[str, Any]],
    centres: dict[str, np.ndarray],
    queries: int,
    seed: int,
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    by_angle: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_angle.setdefault(r["angle"], []).append(r)
    contact = {"name": "Dana Reyes", "title": "VP Real Estate", "company": "Granite Peak Health"}
    org = OrgContext(org_name="Bench")
    with_ms: list[float] = []
    without_ms: list[float] = []
    eligible = in_angle = top_best = top_checked = fallback_cases = fallback_marked = 0
    replied_picked = picked_total = 0
    for i in range(queries):
        angle = pick.choice(list(ANGLES))
        tier = pick.choice(TIERS)
        vector = unit(centres[angle] + rng.normal(scale=1.2, size=len(centres[angle])))
        task = {
            "angle": angle,
            "tier": tier,
            "step": 1,
            "channel": "email",
            "guidance": "(none)",
            "competitors": [],
        }

        query = Query(vector, angle, tier, task)
        picked: list[Any] = []
        for first in (i % 2 == 0, i % 2 == 1):  # alternate which runs first
            started = time.perf_counter()
            if first:
                picked = with_step(store, llm, org, contact, query)
                with_ms.append((time.perf_counter() - started) * 1000)
            else:
                without_step(store, llm, org, contact, query)
                without_ms.append((time.perf_counter() - started) * 1000)

        pool = by_angle[angle]
        if len(pool) >= 3:
            eligible += 1
            if len(picked) == 3 and all(
                p.tags.get("angle") == angle and p.selected_by != "fallback" for p in picked
            ):
                in_angle += 1
            in_tier = [r for r in pool if r["tier"] == tier]
            candidates = in_tier if len(in_tier) >= 3 else pool
            best = min(outcomes.RANK[r["outcome"]] for r in candidates)
            top_checked += 1
            top_best += outcomes.RANK[picked[0].outcome] == best
        else:
            fallback_cases += 1
            fallback_marked += sum(p.selected_by == "fallback" for p in picked) == 3 - len(pool)
        replied_picked += sum(p.outcome in REPLIED for p in picked)
        picked_total += len(picked)
    p50_with, p50_without = statistics.median(with_ms), statistics.median(without_ms)
    return {
        "in_angle_rate": round(in_angle / eligible, 4) if eligible else None,
        "top_is_best_outcome_rate": round(top_best / top_checked, 4) if top_checked else None,
        "replied_share_of_picks": round(replied_picked / picked_total, 4),
        "fallback_marked_rate": round(fallback_marked / fallback_cases, 4)
        if fallback_cases
        else None,
        "assembly_p50_ms_with": round(p50_with, 2),
        "assembly_p50_ms_without": round(p50_without, 2),
        "assembly_p95_ms_with": round(percentile(with_ms, 0.95), 2),
        "assembly_p95_ms_without": round(percentile(without_ms, 0.95), 2),
        "added_p50_ms": round(p50_with - p50_without, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    with embedded.scratch_database(Settings.from_env(), "bench_ex", dim=args.dim) as settings:
        run(settings, args)


def run(settings: Settings, args: argparse.Namespace) -> None:
    log(f"generating {args.messages:,} messages over {len(ANGLES)} angles…")
    rows, centres = corpus(args.messages, args.dim, args.seed)
    loaded = load(settings, rows, args.dim, args.seed)
    db = Database(connect_factory(settings, "app"))
    store = KnowledgeStore(db, CountingEmbedder(dim=args.dim, model=MODEL))
    llm = llm_from_settings(Settings.from_env({}))
    replied_base = sum(r["outcome"] in REPLIED for r in rows) / len(rows)
    log("measuring on the shared partition…")
    shared = measure(store, llm, rows, centres, args.queries, args.seed + 2)
    log("moving the org to its own partition…")
    promote(db, ORG)
    log("measuring on the org's own partition…")
    own = measure(store, llm, rows, centres, args.queries, args.seed + 2)
    db.close()
    print(
        json.dumps(
            {
                "bench": "exemplars",
                "messages": len(rows),
                "chunks": loaded,
                "angles": len(ANGLES),
                "dim": args.dim,
                "queries": args.queries,
                "replied_share_of_corpus": round(replied_base, 4),
                "shared": shared,
                "own_partition": own,
                "in_angle_rate": min(shared["in_angle_rate"], own["in_angle_rate"]),
                "added_p50_ms": max(shared["added_p50_ms"], own["added_p50_ms"]),
            }
        )
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
