"""Fairness benchmark (issue 38 item 1): one org launches 5,000 contacts and four orgs 50 each,
at the same time, against a model provider enforcing 600 requests and 200,000 tokens a minute.

Every model call takes the production path below the flows: ``LimitedChatModel`` (the shared
limiter, its state in a scratch PostgreSQL database) around ``TracedChatModel`` (each call
recorded and priced in ``llm_calls``) around ``OpenAIChatModel`` (the official SDK) over HTTP
to ``colony.testing.quota_model.QuotaModelServer``, which enforces the limits over a sliding
minute, answers 429 past them and logs every request. Each org has its own API key, so the
stand-in's log can be summed per org.

Each contact is the campaign chain's three calls, one after another: AGT-003 (enrich), AGT-004
(qualify), AGT-005 (message), with each agent's real output contract and output cap
(``budgets.json``) and a prompt of a fixed size per agent. A call the limiter refuses is
retried at the time it booked (as the ``colony-redeliver`` task would bring it back); an
answered call takes a latency drawn from a seeded lognormal (``--latency``, ``--sigma``)
before the contact's next call.

Time is simulated, honestly: one clock (``SimClock``) is read by the limiter and by the
stand-in, and the benchmark moves it from event to event (a discrete-event loop). Nothing
sleeps; the limiter's decisions, the stand-in's window and every database write are real. The
run is one process, so "instances" are not many here (tests/test_limiter.py holds two).

Runs: the five orgs together, then each small org alone (new org ids, the clock moved on far
enough that the limiter's state from the run before has refilled and forgotten its orgs).

Prints one JSON line: 429s seen by the stand-in (target ≤ 1 % of calls), each small org's
wall time together against alone (target ≤ 1.5×) with the least any scheduler could achieve
(the four small orgs' work at the whole limit), the large org's use of the limit while it had
work (target ≥ 85 %), and each org's cost as recorded against the stand-in's log priced by
the table (target: equal).

    python bench/fairness.py [--scale 1.0] [--latency 1.0] [--sigma 0.6] [--seed 38]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from colony.adapters.openai_chat import OpenAIChatModel
from colony.context.budgets import load_budgets
from colony.context.tokens import counter_for
from colony.contracts import OUTPUT_CONTRACTS
from colony.llm.limited import LimitedChatModel
from colony.local import embedded
from colony.observability.call_records import CallRecorder
from colony.observability.tracing import TracedChatModel
from colony.ports import Message, ModelRequest
from colony.registry.limits import LimitTable, Rate
from colony.registry.prices import load_prices
from colony.runtime.limiter import Limiter, RateWait
from colony.settings import Settings
from colony.store import Database, connect_factory
from colony.store.tenants import usage
from colony.testing.quota_model import QuotaModelServer, SimClock
from colony.testing.tail_model import LatencyModel

MODEL = "gpt-4o-mini"
PER_MINUTE, TOKENS_PER_MINUTE = 600, 200_000
# (agent, output contract, prompt characters): about 450, 350 and 550 tokens of prompt
CHAIN = (
    ("AGT-003", "prospect_enrichment", 1_800),
    ("AGT-004", "qualification_score", 1_400),
    ("AGT-005", "outbound_message", 2_200),
)
TARGETS = {"refused_share": 0.01, "small_ratio": 1.5, "large_use": 0.85}
RUN_GAP = 10_000.0  # simulated seconds between runs: longer than the limiter forgets an org


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class Org:
    org_id: str
    contacts: int
    started: float = 0.0
    finished: float = 0.0
    calls: int = 0
    waits: int = 0


def prompt(org: str, contact: int, chars: int) -> str:
    words = f"{org} contact {contact}: company, title, signals and the task to do. "
    return (words * (chars // len(words) + 1))[:chars]


def run(
    orgs: list[Org], clock: SimClock, server: QuotaModelServer, db: Database, latency: LatencyModel
) -> None:
    """Every org's contacts through the chain, launched at ``clock.now``; until all are done."""
    budgets = load_budgets(None)
    recorder = CallRecorder(db, load_prices(None))
    limits = LimitTable(models={MODEL: Rate(PER_MINUTE, TOKENS_PER_MINUTE)})
    limiter = Limiter(db, clock)
    counter = counter_for(MODEL)
    models = {}
    for org in orgs:
        adapter = OpenAIChatModel(api_key=f"sk-{org.org_id}", base_url=server.openai_base_url)
        traced = TracedChatModel(adapter, recorder=recorder)
        models[org.org_id] = LimitedChatModel(traced, limiter, limits, counter)
    schemas = {name: OUTPUT_CONTRACTS[name].model_json_schema() for _, name, _ in CHAIN}
    due: list[tuple[float, int, int, int, int]] = []  # (at, seq, org index, contact, step)
    seq = 0
    for index, org in enumerate(orgs):
        org.started = clock.now
        for contact in range(org.contacts):
            due.append((clock.now, seq, index, contact, 0))
            seq += 1
    heapq.heapify(due)
    while due:
        at, _, index, contact, step = heapq.heappop(due)
        clock.now = at
        org = orgs[index]
        agent, output, chars = CHAIN[step]
        request = ModelRequest(
            model=MODEL,
            messages=(Message("user", prompt(org.org_id, contact, chars)),),
            output_name=output,
            output_schema=schemas[output],
            max_output_tokens=budgets.call_for(agent).output,
            metadata={"org_id": org.org_id, "agent_id": agent},
        )
        try:
            models[org.org_id].request(request)
        except RateWait as wait:  # the redelivery task brings it back then
            org.waits += 1
            seq += 1
            heapq.heappush(due, (at + wait.retry_after, seq, index, contact, step))
            continue
        org.calls += 1
        took = latency.sample(f"{org.org_id}:{contact}:{step}")
        seq += 1
        if step + 1 < len(CHAIN):
            heapq.heappush(due, (at + took, seq, index, contact, step + 1))
        else:
            org.finished = max(org.finished, at + took)
    clock.now = max(org.finished for org in orgs)


def use_of_limit(server: QuotaModelServer, key: str, start: float, end: float) -> dict[str, float]:
    """The share of the limit ``key``'s answered calls (and everyone's) used in [start, end]."""
    minutes = max(end - start, 1e-9) / 60
    mine = [e for e in server.log if e.status == 200 and start <= e.at <= end and e.key == key]
    every = [e for e in server.log if e.status == 200 and start <= e.at <= end]

    def share(entries: list[Any]) -> float:
        requests = len(entries) / (PER_MINUTE * minutes)
        tokens = sum(e.prompt_tokens + e.completion_tokens for e in entries)
        return round(max(requests, tokens / (TOKENS_PER_MINUTE * minutes)), 4)

    return {"org": share(mine), "everyone": share(every)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="of the large org's 5,000")
    parser.add_argument("--latency", type=float, default=1.0, help="median seconds a call takes")
    parser.add_argument("--sigma", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    latency = LatencyModel(args.latency, args.sigma, args.seed)
    big = max(1, round(5_000 * args.scale))
    together = [Org("org_large", big)] + [Org(f"org_small_{n}", 50) for n in range(1, 5)]
    alone = [Org(f"org_alone_{n}", 50) for n in range(1, 5)]
    started = time.perf_counter()
    clock = SimClock()
    with (
        embedded.scratch_database(Settings.from_env(), "bench_fairness") as settings,
        QuotaModelServer(
            per_minute=PER_MINUTE, tokens_per_minute=TOKENS_PER_MINUTE, clock=clock
        ) as server,
    ):
        db = Database(connect_factory(settings, "app"), pool_size=2)
        for org in together + alone:
            with db.transaction(org.org_id) as cur:
                cur.execute(
                    "INSERT INTO organizations (id, name) VALUES (%s, %s)", (org.org_id, "bench")
                )
        log(f"together: {big} + 4 × 50 contacts, 3 calls each…")
        run(together, clock, server, db, latency)
        for org in alone:
            clock.now += RUN_GAP
            log(f"alone: {org.org_id}…")
            run([org], clock, server, db, latency)
        recorded = {}
        for org in together + alone:
            with db.transaction(org.org_id) as cur:
                recorded[org.org_id] = Decimal(usage.standing(cur)["spent_usd"])
        db.close()
        prices = load_prices(None)
        logged: dict[str, Decimal] = defaultdict(Decimal)
        for entry in server.log:
            if entry.status == 200:
                cost = prices.cost(entry.model, entry.prompt_tokens, 0, entry.completion_tokens)
                logged[entry.key.removeprefix("sk-")] += cost or Decimal(0)
        summary = server.summary()
        large = together[0]
        used = use_of_limit(server, "sk-org_large", large.started, large.finished)
        small_calls = 4 * 50 * len(CHAIN)
        small_tokens = sum(
            e.prompt_tokens + e.completion_tokens
            for e in server.log
            if e.status == 200 and e.key.startswith("sk-org_small_")
        )
        # the four small orgs' work at the whole limit: no scheduler finishes the last sooner
        floor_s = max(small_calls / PER_MINUTE, small_tokens / TOKENS_PER_MINUTE) * 60
    small: list[dict[str, Any]] = []
    ratios: list[float] = []
    for mine, solo in zip(together[1:], alone, strict=True):
        wall, solo_wall = mine.finished - mine.started, solo.finished - solo.started
        ratios.append(wall / solo_wall)
        small.append(
            {
                "org": mine.org_id,
                "wall_s": round(wall, 1),
                "alone_s": round(solo_wall, 1),
                "ratio": round(wall / solo_wall, 2),
                "best_possible_ratio": round(max(floor_s, solo_wall) / solo_wall, 2),
                "waits": mine.waits,
            }
        )
    calls = summary["answered"] + summary["refused_429"]
    costs = {
        org.org_id: {
            "recorded_usd": float(recorded[org.org_id]),
            "stand_in_usd": float(logged[org.org_id]),
        }
        for org in together + alone
    }
    equal = all(recorded[o.org_id] == logged[o.org_id] for o in together + alone)
    result = {
        "bench": "fairness",
        "scale": args.scale,
        "contacts": {"large": big, "small": 50},
        "limits": {"requests_per_minute": PER_MINUTE, "tokens_per_minute": TOKENS_PER_MINUTE},
        "latency": latency.describe(),
        "calls": calls,
        "refused_429": summary["refused_429"],
        "refused_share": round(summary["refused_429"] / max(calls, 1), 4),
        "small_orgs": small,
        "large": {
            "wall_s": round(large.finished - large.started, 1),
            "calls": large.calls,
            "waits": large.waits,
            "use_of_limit": used["org"],
            "everyones_use_of_limit": used["everyone"],
        },
        "costs": costs,
        "costs_equal": equal,
        "targets": TARGETS,
        "met": {
            "refused_share": summary["refused_429"] / max(calls, 1) <= TARGETS["refused_share"],
            "small_ratio": max(ratios) <= TARGETS["small_ratio"],
            "large_use": used["org"] >= TARGETS["large_use"],
            "costs_equal": equal,
        },
        "bench_seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
