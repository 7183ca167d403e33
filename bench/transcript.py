"""AGT-006 benchmark: a ~25k-token transcript through both passes, parallel vs serial.

A scratch database gets the demo org; the demo transcript is repeated to ~25k tokens. The
offline provider answers, behind a fixed latency per call (a stand-in for a real model's
round trip; real models take seconds), so the wall times compare scheduling, not model
speed. The same transcript runs twice on fresh recordings: with the pass-1 parallelism
given (``COLONY_RECORDING_PARALLELISM`` in a deployment), then with one worker.
Transcripts are held by an in-memory blob store (GCS is not what is measured here).

Prints one JSON line: chunks, LLM calls, wall seconds parallel and serial and their ratio
(target ≤ 0.25), the most tokens any single call received vs the budget, and the whole
transcript's tokens (no call comes near it).

    python bench/transcript.py [--latency 1.0] [--parallelism 8] [--tokens 25000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from dataclasses import replace
from typing import Any

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.offline import OfflineChatModel
from colony.context.tokens import counter_for
from colony.flows.recordings import recording
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.llm.runner import StructuredRunner
from colony.local import embedded
from colony.local.demo import DEMO_DIR, load_demo
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_one
from colony.testing.fakes import MemoryBlobStore
from colony.testing.inline import InlineTransport, local_deps

ORG = "org_zoomprop_demo"


class FixedLatency:
    """The offline model behind a fixed per-call latency; records every call's prompt size."""

    def __init__(self, latency: float, count: Any) -> None:
        self.inner, self.latency, self.count = OfflineChatModel(), latency, count
        self.calls: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def request(self, request: Any) -> Any:
        tokens = self.count("\n".join(m.content for m in request.messages))
        with self._lock:
            self.calls.append((request.output_name, tokens))
        time.sleep(self.latency)  # the simulated provider round trip
        return self.inner.request(request)


def run(deps: Deps, model: FixedLatency, text: bytes, label: str) -> dict[str, Any]:
    uri = deps.blobs.put(f"transcripts/{label}.txt", text, "text/plain")
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "INSERT INTO recordings (org_id, source_file_id, title,"
            " transcript_uri) VALUES (%s, %s, %s, %s) RETURNING id",
            (ORG, label, "Mercy Ridge Health <> ZoomProp | Discovery", uri),
        )
    assert row is not None
    model.calls.clear()
    started = time.perf_counter()
    outcome = recording.analyse(deps, ORG, row["id"], f"bench-{label}")
    return {
        "seconds": time.perf_counter() - started,
        "outcome": outcome,
        "calls": list(model.calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument(
        "--parallelism", type=int, default=Settings().recording_parallelism
    )  # COLONY_RECORDING_PARALLELISM's default
    parser.add_argument("--tokens", type=int, default=25_000)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    with embedded.scratch_database(Settings.from_env(), "bench_transcript") as base:
        # One pooled connection per pass-1 worker (plus the flow's own), as a deployment
        # sized for its parallelism would have: otherwise connection set-up is measured.
        db = Database(connect_factory(base, "app"), pool_size=args.parallelism + 2)
        knowledge = KnowledgeStore(db, OfflineHashEmbedder())
        load_demo(db, knowledge, say=lambda m: print(m, file=sys.stderr))
        demo = (DEMO_DIR / "transcripts" / "discovery_mercy_ridge.txt").read_text()
        counter = counter_for(llm_from_settings(base).model)
        text = demo
        while counter.count(text) < args.tokens:
            text += "\n" + demo
        text = counter.truncate(text, args.tokens)
        results = {}
        for label, workers in (("parallel", args.parallelism), ("serial", 1)):
            settings = replace(base, recording_parallelism=workers)
            model = FixedLatency(args.latency, counter.count)
            llm = llm_from_settings(settings, db)
            llm = replace(llm, chat=model, runner=StructuredRunner(model))
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
        line = {
            "bench": "transcript",
            "transcript_tokens": par["outcome"]["transcript_tokens"],
            "chunks": par["outcome"]["chunks"],
            "signals": par["outcome"]["signals"],
            "llm_calls": len(par["calls"]),
            "pass1_calls": sum(1 for n, _ in par["calls"] if n == "call_signals"),
            "latency_per_call_s": args.latency,
            "parallelism": args.parallelism,
            "wall_parallel_s": round(par["seconds"], 3),
            "wall_serial_s": round(ser["seconds"], 3),
            "parallel_vs_serial": round(par["seconds"] / ser["seconds"], 3),
            "target_ratio": 0.25,
            "max_tokens_any_call": max(t for _, t in par["calls"]),
            "budget_pass1_total": budget["AGT-006/pass1"],
            "budget_pass2_total": budget["AGT-006/pass2"],
            "pass1_chunk_tokens": recording.chunk_tokens(deps),
        }
        db.close()
    print(json.dumps(line))


if __name__ == "__main__":
    main()
