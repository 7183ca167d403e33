"""Campaign pipeline benchmark: N prospects through every function over HTTP.

A scratch database gets the demo org plus synthetic prospects cloned from the demo ones (the
same share match anti-ICP rules). Every function runs as its own functions-framework server,
the local transport pushes between them. The model is
``colony.testing.tail_model.TailModelServer``, reached by each function through the real
OpenAI adapter over HTTP: the offline model's answers, each after a latency drawn from a
seeded lognormal (median ``--latency``, shape ``--sigma``), since a model that answers at
once made ``prospects_per_s`` a measure of everything but the model. Three runs:

1. clean: N prospects, behind that latency; prospects/s, the latencies drawn (p50, p95,
   max, sum) and LLM calls per agent (AGT-004 = non-anti-ICP, AGT-005 = qualified with a
   signal to reference, anti-ICP = 0);
2. duplicates: a campaign over ``--sample`` prospects with every message delivered three
   times (same message id); LLM calls and approval items must equal the contacts' needs;
3. crashes: the same with a crash injected after each step of each contact's chain (one
   per event); steps recomputed = LLM calls beyond one per contact per agent (must be 0).
   These two count calls, not time: the model answers them at once.

Prints one JSON line.

    python bench/campaign.py [--prospects 1000] [--sample 150] [--latency 1.0] [--sigma 0.6]
                             [--seed 37]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.transport_local import LocalTransport
from colony.flows.campaigns import campaign
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local import embedded
from colony.local.campaign_demo import function_env
from colony.local.demo import load_demo, read_json
from colony.local.functions import FunctionServers
from colony.policy.anti_icp import match_rules
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_all
from colony.testing.inline import local_deps
from colony.testing.tail_model import LatencyModel, TailModelServer

ORG = "org_zoomprop_demo"
CLONE = """
INSERT INTO contacts (org_id, external_id, name, title, email, company, company_domain,
                      enrichment, raw_enrichment_html, signals)
SELECT org_id, %s, name, title, email, company || %s, company_domain, enrichment,
       raw_enrichment_html, signals
FROM contacts WHERE external_id = %s
"""
PROSPECTS = """
SELECT id, external_id, name, email, enrichment, signals, title, company
FROM contacts ORDER BY external_id
"""
FAULTS = "prospect-enrichment.after_step,qualification.after_step,message-generator.after_step"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def calls(db: Database) -> dict[str, int]:
    with db.transaction(ORG) as cur:
        rows = fetch_all(cur, "SELECT agent_id, count(*) AS n FROM llm_calls GROUP BY agent_id")
    return {r["agent_id"]: int(r["n"]) for r in rows}


def run(
    settings: Settings,
    db: Database,
    knowledge: KnowledgeStore,
    app_dsn: str,
    contact_ids: list[str],
    extra_env: dict[str, str],
    label: str,
) -> dict[str, Any]:
    env = {**function_env(settings, app_dsn), **extra_env}
    with FunctionServers(env, log_dir=settings.data_dir / "logs") as servers:
        transport = LocalTransport(servers.urls)
        deps = local_deps(settings, db, transport, llm_from_settings(settings, db), knowledge)
        before = calls(db)
        campaign_id = campaign.create_campaign(
            deps, ORG, name=label, angle="Signal", tier="T1", contact_ids=contact_ids
        )
        started = time.perf_counter()
        run_id = campaign.launch(deps, ORG, campaign_id)
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            with db.transaction(ORG) as cur:
                state = fetch_all(
                    cur, "SELECT status, contacts_done FROM campaign_runs WHERE id = %s", (run_id,)
                )
            if state and state[0]["status"] == "completed":
                break
            time.sleep(0.25)  # progress polling of an asynchronous pipeline, bounded
        else:
            raise SystemExit(f"{label}: the run did not complete")
        elapsed = time.perf_counter() - started
        transport.close()
    with db.transaction(ORG) as cur:
        items = fetch_all(cur, "SELECT subject_id FROM approval_items WHERE run_id = %s", (run_id,))
    made = {k: v - before.get(k, 0) for k, v in calls(db).items()}
    return {
        "seconds": elapsed,
        "calls": made,
        "items": len(items),
        "distinct_items": len({i["subject_id"] for i in items}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prospects", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=150)
    parser.add_argument("--latency", type=float, default=1.0, help="median seconds a call")
    parser.add_argument("--sigma", type=float, default=0.6, help="lognormal shape: the tail")
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    latency = LatencyModel(args.latency, args.sigma, args.seed)
    with (
        embedded.scratch_database(Settings.from_env(), "bench_campaign") as settings,
        TailModelServer(latency) as model,
    ):
        app_dsn = settings.db_dsn or ""
        provider = {  # every function's model: the real OpenAI adapter, pointed at the stand-in
            "COLONY_LLM_PROVIDER": "openai",
            "COLONY_OPENAI_BASE_URL": model.openai_base_url,
            "OPENAI_API_KEY": "sk-bench-not-a-key",
        }
        db = Database(connect_factory(settings, "app"))
        knowledge = KnowledgeStore(db, OfflineHashEmbedder())
        load_demo(db, knowledge, say=log)
        demo = read_json("contacts.json")
        log(f"cloning {args.prospects - len(demo)} synthetic prospects…")
        with db.transaction(ORG) as cur:
            for i in range(args.prospects - len(demo)):
                source = demo[i % len(demo)]["external_id"]
                cur.execute(CLONE, (f"S-{i:05d}", f" #{i // len(demo) + 2}", source))
            contacts = fetch_all(cur, PROSPECTS)
            icp = fetch_all(cur, "SELECT anti_icp_rules FROM icp_definitions WHERE active")[0]
        anti = {c["id"] for c in contacts if match_rules(c, icp["anti_icp_rules"])}
        ids = [c["id"] for c in contacts]

        log(f"run 1: {len(ids)} prospects through the functions…")
        clean = run(settings, db, knowledge, app_dsn, ids, provider, "bench clean")
        drawn = model.take_stats()
        model.latency = LatencyModel(0.0)  # runs 2 and 3 count calls: no need to wait
        sample = ids[: args.sample]
        sample_anti = len([i for i in sample if i in anti])
        log(f"run 2: {len(sample)} prospects, every message delivered 3 times…")
        dup = run(
            settings,
            db,
            knowledge,
            app_dsn,
            sample,
            {**provider, "COLONY_LOCAL_DELIVERY_COPIES": "3"},
            "bench duplicates",
        )
        log(f"run 3: {len(sample)} prospects, a crash after every step…")
        crash = run(
            settings,
            db,
            knowledge,
            app_dsn,
            sample,
            {**provider, "COLONY_INJECT_FAULTS": FAULTS},
            "bench crashes",
        )
        needed = len(sample) - sample_anti
        recomputed = sum(
            max(crash["calls"].get(a, 0) - n, 0)
            for a, n in (
                ("AGT-003", needed),
                ("AGT-004", needed),
                ("AGT-005", crash["distinct_items"]),
            )
        )
        print(
            json.dumps(
                {
                    "bench": "campaign",
                    "prospects": len(ids),
                    "anti_icp": len(anti),
                    "seconds": round(clean["seconds"], 2),
                    "prospects_per_s": round(len(ids) / clean["seconds"], 2),
                    "model": {
                        **latency.describe(),
                        **{k: v for k, v in drawn.items() if k != "calls"},
                    },
                    "llm_calls": clean["calls"],
                    "anti_icp_llm_calls": 0
                    if clean["calls"].get("AGT-004", 0) == len(ids) - len(anti)
                    else "mismatch",
                    "approval_items": clean["items"],
                    "duplicates": {
                        "prospects": len(sample),
                        "deliveries_per_message": 3,
                        "llm_calls": dup["calls"],
                        "approval_items": dup["items"],
                        "distinct_items": dup["distinct_items"],
                    },
                    "crash": {
                        "prospects": len(sample),
                        "llm_calls": crash["calls"],
                        "steps_recomputed": recomputed,
                    },
                }
            )
        )
        db.close()


if __name__ == "__main__":
    main()
