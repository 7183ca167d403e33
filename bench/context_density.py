"""Context density benchmark: compact vs naive entity JSON, assembly speed, budget overruns.

Reads the demo org's real rows from the embedded PostgreSQL (loading the demo if needed),
counts tokens of each entity serialised three ways: naively (every column, indented and
ASCII-escaped, as an ORM dump would give it), plainly (every column in one line of JSON, no
spaces, UTF-8 kept: ``json.dumps(row, separators=(",", ":"), ensure_ascii=False)``, the
cheapest dump anyone would write) and compactly (seed §7.3: audit fields, internal ids,
non-essential fields and empties dropped). Against the naive dump the ratio flatters: most of
what it saves is whitespace and escapes; against the plain one it is what dropping fields
saves. Times the pure assembler for every agent profile (no I/O inside the timed region), and
fuzzes the assembler to find the largest budget overrun. Prints one JSON line.

    python bench/context_density.py [--repeat 200] [--fuzz 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

from colony.adapters.embedding import embedder_from_settings
from colony.context.assembler import AssemblyRequest, assemble
from colony.context.budgets import SECTIONS, load_budgets
from colony.context.serialize import NON_ESSENTIAL, compact, dumps, naive_dumps
from colony.context.tokens import counter_for
from colony.contracts import Exemplar
from colony.errors import ContextBudgetExceeded
from colony.knowledge import KnowledgeStore
from colony.local.db import connect_factory
from colony.local.demo import load_demo, read_json
from colony.local.scenario import demo_requests
from colony.ports import Message
from colony.settings import Settings
from colony.store import Database, ensure_app_role_grants, fetch_all, migrate


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--fuzz", type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    settings = Settings.from_env()
    owner = connect_factory(settings, "owner")()
    migrate(owner, dim=settings.embedding_dim)
    ensure_app_role_grants(owner, settings.db_app_role)
    owner.close()
    db = Database(connect_factory(settings, "app"))
    knowledge = KnowledgeStore(db, embedder_from_settings(settings))
    org_id = read_json("org.json")["id"]
    log("loading the demo org (idempotent)…")
    load_demo(db, knowledge, say=log)

    budgets = load_budgets()
    counter = counter_for(budgets.model_for("openai"))
    with db.transaction(org_id) as cur:
        rows = {
            table: fetch_all(cur, f"SELECT * FROM {table}")  # fixed table names
            for table in ("contacts", "deals", "icp_definitions", "sequences")
        }
    naive = sum(counter.count(naive_dumps(r)) for table in rows.values() for r in table)
    plain = sum(
        counter.count(json.dumps(r, separators=(",", ":"), ensure_ascii=False, default=str))
        for table in rows.values()
        for r in table
    )
    dense = sum(
        counter.count(dumps(compact(r, strip=NON_ESSENTIAL))) for t in rows.values() for r in t
    )

    requests = demo_requests(db, knowledge, org_id)
    db.close()
    assembly_ms: dict[str, float] = {}
    max_overrun = 0
    for profile, request in requests.items():
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            out = assemble(request, budgets=budgets, counter=counter)
            times.append((time.perf_counter() - started) * 1000)
        assembly_ms[profile] = round(statistics.median(times), 3)
        max_overrun = max(max_overrun, *(out.account[s] - out.budget.of(s) for s in SECTIONS))

    log(f"fuzzing the assembler with {args.fuzz} random inputs…")
    rng = random.Random(7)
    words = " ".join(r["name"] for r in rows["contacts"]).split()
    exceeded = 0
    for _ in range(args.fuzz):
        profile = rng.choice(list(requests))
        base = requests[profile]

        def text(n: int) -> str:
            return " ".join(rng.choice(words) for _ in range(n))

        fuzzed = AssemblyRequest(
            base.profile,
            base.org_id,
            base.run_id,
            base.org,
            exemplars=[
                Exemplar(domain="KC-05", content=text(rng.randint(1, 400)))
                for _ in range(rng.randint(0, 6))
            ],
            entities={**base.entities, "notes": {"raw_html": text(rng.randint(0, 2000))}},
            history=[Message("user", text(rng.randint(1, 300))) for _ in range(rng.randint(0, 20))],
            task={**base.task, "extra": text(rng.randint(0, 500))},
        )
        try:
            out = assemble(fuzzed, budgets=budgets, counter=counter)
        except ContextBudgetExceeded:
            exceeded += 1
            continue
        max_overrun = max(max_overrun, *(out.account[s] - out.budget.of(s) for s in SECTIONS))

    print(
        json.dumps(
            {
                "bench": "context_density",
                "tokenizer": counter.label,
                "entities": sum(len(t) for t in rows.values()),
                "naive_tokens": naive,
                "plain_tokens": plain,
                "compact_tokens": dense,
                "compact_ratio": round(dense / naive, 3),
                "compact_vs_plain_ratio": round(dense / plain, 3),
                "assembly_p50_ms": assembly_ms,
                "fuzz_inputs": args.fuzz,
                "fuzz_budget_exceeded_errors": exceeded,
                "max_budget_overrun": max(max_overrun, 0),
            }
        )
    )


if __name__ == "__main__":
    main()
