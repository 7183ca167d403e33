"""Chat benchmark: N turns of one session against the running chat function, then the time
to the model's first delta against a streaming stand-in. One JSON line.

The chat function runs as a real functions-framework server on a scratch database (the demo
org); its database connections pass through a small counting proxy that sees every message
the driver sends, so DB round trips (Query + Sync messages) per turn are measured, not
estimated. Phase 1 (offline model, ``--turns``): p50/p95 ms from sending the POST to the first
event (``accepted``) and to ``done``, the largest stored history after any turn against
AGT-001's history budget (it must not exceed it), the summaries kept (one rolling summary), DB
round trips per turn (mean, p50 and max: the target of 20 holds for every turn, those that
compact the history included), and whether a turn's time grows with the thread (the mean of
the last 50 turns against the first 50). Phase 2 (``--stream-turns``): a second chat function whose
provider is OpenAI, through the official SDK's streaming API, pointed at the wire stand-in,
which streams every answer with a fixed first-token delay and inter-token delay (``--ttft-ms``,
``--gap-ms``; the first chunk carries the answer's first word, as a model's first tokens do):
p50/p95 ms from sending the POST to the first ``delta`` event, against the target of the
first-token delay + 50 ms (this function's connections skip the counting proxy).
``meets_targets``: all of them hold (``targets_met``, each).

    python bench/chat.py [--turns 300] [--stream-turns 40] [--ttft-ms 200] [--gap-ms 10]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import statistics
import sys
import time

import httpx

from colony.adapters.embedding import OfflineHashEmbedder
from colony.flows.chat import history
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local import embedded
from colony.local.campaign_demo import function_env
from colony.local.chat_demo import read_sse
from colony.local.demo import load_demo
from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.settings import Settings
from colony.store import Database, connect_factory, fetch_all
from colony.testing.pgproxy import CountingProxy
from colony.testing.wire import RecordedRequest, Reply, Route, WireServer, openai_chat_stream

ORG = "org_zoomprop_demo"
ROUND_TRIPS_TARGET = 20  # per turn, every turn: judged on the max
GROWTH_TARGET = 1.2  # last 50 turns' mean POST → done over the first 50's
MESSAGES = [
    "Good morning, what should I focus on today? I prefer short answers.",
    "What does our pipeline look like?",
    "Search the knowledge core for objections about price",
    "Show the approval queue",
    "We decided to prioritise lease expiry signals; remind me tomorrow about P-004.",
    "Find case studies in KC-05 about consolidation",
    "Thanks, anything on AGT-005 drafts I should know?",
]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def growth(turn_ms: list[float], window: int = 50) -> dict[str, float]:
    """Mean of the first and the last ``window`` turns, and their ratio (target ≤ 1.2)."""
    first = statistics.mean(turn_ms[:window])
    last = statistics.mean(turn_ms[-window:])
    return {"first": round(first, 1), "last": round(last, 1), "ratio": round(last / first, 2)}


STREAMED_ANSWER = (
    "Good morning. Three deals moved this week; the approval queue holds two drafts for"
    " AGT-005's Signal angle, and the lease expiry signals look strongest for P-004."
)


def streamed_answer(request: RecordedRequest) -> Reply:
    """Every chat completion, streamed word by word: the first chunk opens the JSON and
    carries the first word (what a model's first tokens are), the pace is the server's."""
    text = json.dumps({"answer": STREAMED_ANSWER})
    words = text.split(" ")
    pieces = [words[0] + " " + words[1]] + [" " + w for w in words[2:]]
    reply = openai_chat_stream(text, model="gpt-stand-in", pieces=pieces)
    # The role-only chunk and the first word's go out together, at the first-token delay: as
    # sent, the first word came one inter-token gap later, which charged the stand-in's own
    # pacing (``--gap-ms``) to the chat's overhead.
    assert reply.events is not None
    first, *rest = reply.events
    return dataclasses.replace(reply, events=(first + rest[0], *rest[1:]))


def first_model_delta(
    settings: Settings, dsn: str, headers: dict[str, str], turns: int, ttft_ms: float, gap_ms: float
) -> dict[str, float]:
    """POST → first ``delta`` (ms) over ``turns`` turns against the streaming stand-in."""
    waits: list[float] = []
    with WireServer() as wire:
        wire.add_route(Route.of("bench.chat", "POST", r"/v1/chat/completions", streamed_answer))
        wire.pace(ttft_ms / 1000, gap_ms / 1000)
        env = {
            **function_env(settings, dsn),
            "COLONY_TRANSPORT": "local",
            "COLONY_LLM_PROVIDER": "openai",
            "OPENAI_API_KEY": "sk-bench-stand-in",
            "COLONY_OPENAI_BASE_URL": wire.openai_base_url,
        }
        logs = settings.data_dir / "logs-stream"
        with (
            FunctionServers(env, ["chat"], log_dir=logs) as servers,
            httpx.Client(timeout=60) as http,
        ):
            base = servers.urls["chat"]
            session = http.post(f"{base}/sessions", headers=headers).json()["session_id"]
            log(f"{turns} streamed turns in session {session}…")
            for n in range(turns):
                started = time.perf_counter()
                first = None
                body = {"session_id": session, "message": f"Good morning ({n}), what is new?"}
                with http.stream("POST", f"{base}/turns", json=body, headers=headers) as r:
                    for event in read_sse(r.iter_lines()):
                        if first is None and event.type == "delta":
                            first = time.perf_counter()
                        if event.type == "done":
                            break
                assert first is not None and event.type == "done", f"streamed turn {n} failed"
                waits.append((first - started) * 1000)
    return {
        "p50": round(statistics.median(waits), 1),
        "p95": round(percentile(waits, 0.95), 1),
        "first_token_delay_ms": ttft_ms,
        "inter_token_ms": gap_ms,
        "target_p50_ms": ttft_ms + 50,
        "turns": turns,
        "provider": "openai SDK stream → wire stand-in",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--stream-turns", type=int, default=40)
    parser.add_argument("--ttft-ms", type=float, default=200.0)
    parser.add_argument("--gap-ms", type=float, default=10.0)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    with embedded.scratch_database(Settings.from_env(), "bench_chat") as settings:
        app_dsn = settings.db_dsn or ""
        db = Database(connect_factory(settings, "app"))
        knowledge = KnowledgeStore(db, OfflineHashEmbedder())
        load_demo(db, knowledge, say=log)
        llm = llm_from_settings(settings, db)
        budget = llm.budgets.for_profile("AGT-001").history
        proxy = CountingProxy.in_front_of(app_dsn)
        env = {**function_env(settings, proxy.dsn), "COLONY_TRANSPORT": "local"}
        token = mint_local_token(settings.data_dir, ORG)
        headers = {"Authorization": f"Bearer {token}"}
        first_ms: list[float] = []
        done_ms: list[float] = []
        trips: list[int] = []
        max_history = 0
        with (
            FunctionServers(env, ["chat"], log_dir=settings.data_dir / "logs") as servers,
            httpx.Client(timeout=60) as http,
        ):
            base = servers.urls["chat"]
            session = http.post(f"{base}/sessions", headers=headers).json()["session_id"]
            log(f"{args.turns} turns in session {session}…")
            for n, message in zip(range(args.turns), itertools.cycle(MESSAGES), strict=False):
                before = proxy.round_trips
                started = time.perf_counter()
                first = None
                body = {"session_id": session, "message": message}
                with http.stream("POST", f"{base}/turns", json=body, headers=headers) as r:
                    for event in read_sse(r.iter_lines()):
                        if first is None:
                            first = time.perf_counter()
                        if event.type == "done":
                            break
                end = time.perf_counter()
                assert first is not None and event.type == "done", f"turn {n} did not finish"
                trips.append(proxy.round_trips - before)
                first_ms.append((first - started) * 1000)
                done_ms.append((end - started) * 1000)
                with db.transaction(ORG) as cur:
                    rows = history.load(cur, session)
                max_history = max(max_history, history.tokens(rows, llm.counter.count))
                if (n + 1) % 50 == 0:
                    log(f"  {n + 1} turns")
        summaries = sum(1 for r in rows if r.role == "summary")
        # Straight to the database, as deployed: the counting proxy is phase 1's instrument,
        # and its relay would add its own hop to each round trip before the model call.
        streamed = first_model_delta(
            settings, app_dsn, headers, args.stream_turns, args.ttft_ms, args.gap_ms
        )
        with db.transaction(ORG) as cur:
            kinds = {
                r["type"]: int(r["n"])
                for r in fetch_all(cur, "SELECT type, count(*) AS n FROM chat_events GROUP BY type")
            }
            errors = fetch_all(cur, "SELECT data FROM chat_events WHERE type = 'error' LIMIT 3")
        log(f"events by type: {kinds}; proxy saw {proxy.round_trips} round trips; {errors}")
        over = [(n, t) for n, t in enumerate(trips) if t > ROUND_TRIPS_TARGET]
        log(f"turns over {ROUND_TRIPS_TARGET} round trips (turn, trips): {over or 'none'}")
        ratio = growth(done_ms)["ratio"]
        met = {  # issue 15's targets; round trips on EVERY turn (the max), compactions too
            "first_model_delta": streamed["p50"] <= streamed["target_p50_ms"],
            "db_round_trips": max(trips) <= ROUND_TRIPS_TARGET,
            "within_budget": max_history <= budget,
            "turn_ms_growth": ratio <= GROWTH_TARGET,
        }
        print(
            json.dumps(
                {
                    "bench": "chat",
                    "turns": args.turns,
                    "provider": "offline",  # phase 1; phase 2 is in first_model_delta_ms
                    "first_model_delta_ms": streamed,
                    "first_event_ms": {
                        "p50": round(statistics.median(first_ms), 1),
                        "p95": round(percentile(first_ms, 0.95), 1),
                    },
                    "done_ms": {
                        "p50": round(statistics.median(done_ms), 1),
                        "p95": round(percentile(done_ms, 0.95), 1),
                    },
                    # does a turn's cost grow with the thread? (mean POST→done, ms)
                    "turn_ms_growth": growth(done_ms),
                    "history_tokens_max": max_history,
                    "history_budget": budget,
                    "within_budget": max_history <= budget,
                    "summaries_kept": summaries,
                    "db_round_trips_per_turn": {
                        "mean": round(statistics.mean(trips), 1),
                        "p50": statistics.median(trips),
                        "max": max(trips),
                        "target": ROUND_TRIPS_TARGET,
                    },
                    "meets_targets": all(met.values()),
                    "targets_met": met,
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                    "tokenizer": llm.counter.label,
                }
            )
        )
        db.close()


if __name__ == "__main__":
    main()
