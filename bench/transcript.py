"""AGT-006 benchmark: a ~25k-token transcript through both passes, parallel vs serial.

A scratch database gets the demo org; the demo transcript is repeated to ~25k tokens. The
model is ``colony.testing.tail_model.TailModelServer``, reached through the real OpenAI
adapter over HTTP: the offline model's answers, each after a latency drawn from a seeded
lognormal (median ``--latency``, shape ``--sigma``: the 95th percentile ~2.7x the median),
and a rate limit of ``--rps`` requests a second past which it answers 429 with Retry-After.
A constant latency and no limit made the ratio ~1/parallelism by construction; with a tail,
the slowest chunk bounds the parallel pass, and the 429s are waited for as the provider says
(``early_retries`` counts retries that came before their Retry-After: it must be 0).
The same transcript runs twice on fresh recordings: with the pass-1 parallelism given
(``COLONY_RECORDING_PARALLELISM`` in a deployment), then with one worker. Transcripts are
held by an in-memory blob store (GCS is not what is measured here).

Prints one JSON line: chunks, LLM calls, wall seconds parallel and serial and their ratio
(target ≤ 0.25), per run the latencies drawn (p50, p95, max, sum), the 429s and early
retries, the most tokens any single call received vs the budget, and the whole transcript's
tokens (no call comes near it).

    python bench/transcript.py [--latency 1.0] [--sigma 0.6] [--seed 37] [--rps 4]
                               [--parallelism 8] [--tokens 25000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from typing import Any

from colony.adapters.embedding import OfflineHashEmbedder
from colony.context.tokens import counter_for
from colony.errors import ProviderUnavailable
from colony.flows.recordings import recording
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local import embedded
from colony.local.demo import DEMO_DIR, load_demo
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_one
from colony.testing.fakes import MemoryBlobStore
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.tail_model import LatencyModel, TailModelServer

ORG = "org_zoomprop_demo"


def run(deps: Deps, model: TailModelServer, text: bytes, label: str) -> dict[str, Any]:
    uri = deps.blobs.put(f"transcripts/{label}.txt", text, "text/plain")
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "INSERT INTO recordings (org_id, source_file_id, title,"
            " transcript_uri) VALUES (%s, %s, %s, %s) RETURNING id",
            (ORG, label, "Mercy Ridge Health <> ZoomProp | Discovery", uri),
        )
    assert row is not None
    model.take_stats()
    started = time.perf_counter()
    try:
        outcome: dict[str, Any] = recording.analyse(deps, ORG, row["id"], f"bench-{label}")
    except ProviderUnavailable as error:  # rate-limited past the runner's attempts: say so
        outcome = {"failed": f"{type(error).__name__}: {error}"}
    return {"seconds": time.perf_counter() - started, "outcome": outcome, **model.take_stats()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="median seconds a call")
    parser.add_argument("--sigma", type=float, default=0.6, help="lognormal shape: the tail")
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--rps", type=int, default=4, help="the provider's requests a second")
    parser.add_argument(
        "--parallelism", type=int, default=Settings().recording_parallelism
    )  # COLONY_RECORDING_PARALLELISM's default
    parser.add_argument("--tokens", type=int, default=25_000)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    latency = LatencyModel(args.latency, args.sigma, args.seed)
    with (
        embedded.scratch_database(Settings.from_env(), "bench_transcript") as base,
        TailModelServer(latency, per_second=args.rps) as model,
    ):
        # The real OpenAI adapter, pointed at the stand-in (the key is never checked there).
        base = replace(
            base,
            llm_provider="openai",
            openai_base_url=model.openai_base_url,
            openai_api_key="sk-bench-not-a-key",
        )
        # One pooled connection per pass-1 worker (plus the flow's own), as a deployment
        # sized for its parallelism would have: otherwise connection set-up is measured.
        db = Database(connect_factory(base, "app"), pool_size=args.parallelism + 2)
        knowledge = KnowledgeStore(db, OfflineHashEmbedder())
        load_demo(db, knowledge, say=lambda m: print(m, file=sys.stderr))
        demo = (DEMO_DIR / "transcripts" / "discovery_mercy_ridge.txt").read_text()
        counter = counter_for(llm_from_settings(base).model)
        model.count = counter.count  # the prompt tokens each call is reported with
        text = demo
        while counter.count(text) < args.tokens:
            text += "\n" + demo
        text = counter.truncate(text, args.tokens)
        results = {}
        for label, workers in (("parallel", args.parallelism), ("serial", 1)):
            settings = replace(base, recording_parallelism=workers)
            llm = llm_from_settings(settings, db)
            deps = local_deps(
                settings, db, InlineTransport(), llm, knowledge, blobs=MemoryBlobStore("bench")
            )
            results[label] = run(deps, model, text.encode(), label)
        budgets = llm_from_settings(base).budgets
        budget = {
            p: sum(budgets.for_profile(p).as_dict().values())
            for p in ("AGT-006/pass1", "AGT-006/pass2")
        }
        par, ser = results["parallel"], results["serial"]

        def model_side(result: dict[str, Any]) -> dict[str, Any]:
            keys = ("latency_p50_s", "latency_p95_s", "latency_max_s", "latency_sum_s")
            return {
                "wall_s": round(result["seconds"], 3),
                "llm_calls": result["answered"],
                **{k: result[k] for k in keys},
                "rate_limited_429": result["rate_limited_429"],
                "early_retries": result["early_retries"],
                **(
                    {"failed": result["outcome"]["failed"]} if "failed" in result["outcome"] else {}
                ),
            }

        line = {
            "bench": "transcript",
            "transcript_tokens": par["outcome"].get("transcript_tokens"),
            "chunks": par["outcome"].get("chunks"),
            "signals": par["outcome"].get("signals"),
            "llm_calls": par["answered"],
            "pass1_calls": sum(1 for n, _ in par["calls"] if n == "call_signals"),
            "model": {**latency.describe(), "rate_limit_per_s": args.rps},
            "parallelism": args.parallelism,
            "parallel": model_side(par),
            "serial": model_side(ser),
            "parallel_vs_serial": round(par["seconds"] / ser["seconds"], 3),
            "target_ratio": 0.25,
            "max_tokens_any_call": max((t for _, t in par["calls"]), default=0),
            "budget_pass1_total": budget["AGT-006/pass1"],
            "budget_pass2_total": budget["AGT-006/pass2"],
            "pass1_chunk_tokens": recording.chunk_tokens(deps),
        }
        db.close()
    print(json.dumps(line))


if __name__ == "__main__":
    main()
