"""``make eval-local``: a stated subset of the eval sets against a real open model served on
this machine, through ``colony eval run --base-url``.

``colony.local.llama_server`` builds or reuses ``llama-server`` and the pinned model and
serves it on a free loopback port; ``colony eval`` then runs the cases through the project's
own model path: ``OpenAIChatModel`` (an address that is not OpenAI's, so spoken to as a
compatible server: docs/architecture.md, "What a model call sends") → the structured runner
(retries, the one repair, truncation, ``missing_data``) → ``call_agent`` (the real assembler,
templates and budgets) → the flow's own handling of the answer (``colony.evals.drive``).

The subset (``SUBSET``): AGT-003, AGT-004 and AGT-005 on two demo contacts each and one hard
case each (a contact with nothing to enrich, an anti-ICP contact, a competitor in the
context, an empty enrichment that must be ``missing_data``). A call gets ``--call-seconds``
as its window: a deployed function gives it 100 s, which a 1.5B model on two busy cores does
not meet (docs/quality.md), and without a window every attempt is cut at 100 s and tried
again from the start. The subset runs in rounds (``rounds``: the next case of every agent),
one ``colony eval`` run each, so a run stopped early has every agent's first cases. Each
round's gate is printed, not enforced: a small local model is not expected to hold the
thresholds a provider's model is held to.

After the run, ``figures`` reads the rounds' reports into what docs/quality.md keeps per agent: the
valid-contract rate, calls that took more than one attempt (a repair, or a truncated answer
asked again), how the others ended (truncated, refused, invalid after the repair, timed out),
latency p50/p95 and tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from colony.evals import report
from colony.local import cli, llama_server

SUBSET = (
    "AGT-003/demo/P-001",
    "AGT-003/demo/P-007",
    "AGT-003/missing/name-only",
    "AGT-004/demo/P-001",
    "AGT-004/demo/P-007",
    "AGT-004/missing/empty-enrichment",
    "AGT-005/demo/P-001-signal-T1",
    "AGT-005/demo/P-021-signal-T1",
    "AGT-005/competitor/in-signal-and-news",
)
CALL_SECONDS = 900.0
# How a case ended, from its status and its error's type (``colony.errors.error_summary``).
ENDINGS = {
    "OutputTruncated": "truncated",
    "ModelRefused": "refused",
    "OutputInvalid": "invalid",
    "ProviderTimeout": "timeout",
    "ProviderUnavailable": "timeout",
}


def ending(case: Mapping[str, Any]) -> str:
    """``answer``, ``missing_data``, ``tool``, ``rejected``, or the kind of error."""
    if case["status"] != "error":
        return str(case["status"])
    kind = str(case.get("error") or "").split(" ", 1)[0]
    return ENDINGS.get(kind, "provider_error")


def figures(cases: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per agent, from the reports' cases: how they ended, the valid-contract rate (an
    answer the contract admits, ``missing_data`` included), cases whose call took more than
    one attempt, the eval's own pass rate, latency p50/p95 (s; a case's latency is its model
    calls') and tokens (those of the calls that answered: a failed call's are not known)."""
    out: dict[str, dict[str, Any]] = {}
    for agent in sorted({c["agent"] for c in cases}):
        mine = [c for c in cases if c["agent"] == agent]
        ended: dict[str, int] = {}
        for case in mine:
            ended[ending(case)] = ended.get(ending(case), 0) + 1
        valid = sum(n for e, n in ended.items() if e in ("answer", "missing_data", "tool"))
        latencies = [c["latency_ms"] for c in mine if c["calls"]]
        out[agent] = {
            "cases": len(mine),
            "ended": ended,
            "valid_contract": valid,
            "valid_rate": round(valid / len(mine), 3),
            "more_than_one_attempt": sum(c["attempts"] > c["calls"] for c in mine),
            "passed": sum(bool(c["passed"]) for c in mine),
            "pass_rate": round(sum(bool(c["passed"]) for c in mine) / len(mine), 3),
            "latency_s": {
                "p50": _seconds(report.percentile(latencies, 50)),
                "p95": _seconds(report.percentile(latencies, 95)),
            },
            "tokens": {
                "in": sum(c["tokens_in"] for c in mine),
                "out": sum(c["tokens_out"] for c in mine),
            },
        }
    return out


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else round(ms / 1000, 1)


def table(per_agent: Mapping[str, Mapping[str, Any]]) -> str:
    """The figures as the Markdown table docs/quality.md keeps."""
    rows = [
        "| agent | cases | valid contract | >1 attempt | truncated | refused | invalid"
        " | timed out | eval pass rate | latency p50 / p95 (s) | tokens in / out |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for agent, f in per_agent.items():
        e = f["ended"]
        rows.append(
            f"| {agent} | {f['cases']} | {f['valid_contract']} ({f['valid_rate']:.0%})"
            f" | {f['more_than_one_attempt']} | {e.get('truncated', 0)} | {e.get('refused', 0)}"
            f" | {e.get('invalid', 0)} | {e.get('timeout', 0)} | {f['pass_rate']:.0%}"
            f" | {f['latency_s']['p50']} / {f['latency_s']['p95']}"
            f" | {f['tokens']['in']} / {f['tokens']['out']} |"
        )
    return "\n".join(rows)


def eval_args(base_url: str, cases: Sequence[str], seconds: float, out: Path) -> list[str]:
    """``colony eval run``'s arguments for the subset against the local server."""
    argv = ["eval", "run", "--base-url", base_url, "--model", llama_server.MODEL.name]
    argv += ["--judge", "none", "--call-seconds", str(seconds), "--out", str(out), "-v"]
    for case in cases:
        argv += ["--case", case]
    return argv


def new_report(out: Path, before: set[Path]) -> dict[str, Any]:
    """The report the run wrote under ``out`` (``before``: those there already)."""
    runs = set(out.glob("*/report.json")) - before
    if len(runs) != 1:
        raise SystemExit(f"eval-local: colony eval wrote {len(runs)} new reports under {out}")
    return dict(json.loads(runs.pop().read_text(encoding="utf-8")))


def rounds(cases: Sequence[str]) -> list[list[str]]:
    """The cases in rounds, each with the next case of every agent: a run cut short still
    has each agent's first cases (colony eval runs a selection in the sets' order)."""
    per_agent: dict[str, list[str]] = {}
    for case in cases:
        per_agent.setdefault(case.split("/", 1)[0], []).append(case)
    depth = max((len(v) for v in per_agent.values()), default=0)
    return [[v[i] for v in per_agent.values() if i < len(v)] for i in range(depth)]


def run_rounds(base_url: str, cases: Sequence[str], seconds: float, out: Path) -> list[Any]:
    """``colony eval run`` once per round; every case of every report written."""
    done: list[Any] = []
    for chosen in rounds(cases):
        before = set(out.glob("*/report.json"))
        if cli.main(eval_args(base_url, chosen, seconds, out)) == 2:
            raise SystemExit("eval-local: colony eval could not run (said above)")
        done += new_report(out, before)["cases"]
    return done


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="eval-local", description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", help="a case id (default: SUBSET)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server already running")
    parser.add_argument("--call-seconds", type=float, default=CALL_SECONDS)
    parser.add_argument("--threads", type=int, default=0, help="0: chosen by the load")
    args = parser.parse_args(argv)
    # a stop (make's, or a kill) still stops the server: ``serving`` ends in ``finally``
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cache = llama_server.cache_dir()
    out = cache / "runs"
    cases = args.case or list(SUBSET)
    load_before = os.getloadavg()
    if args.base_url:
        done = run_rounds(args.base_url, cases, args.call_seconds, out)
    else:
        binary = llama_server.build_server(cache)
        model = llama_server.fetch_model(cache)
        threads = args.threads or llama_server.threads_for_load()
        options = llama_server.ServerOptions(threads=threads)
        log = cache / "logs" / "llama-server.log"
        with llama_server.serving(binary, model, llama_server.MODEL.name, log, options) as url:
            print(f"eval-local: serving on {url}, {threads} thread(s) (log: {log})", flush=True)
            done = run_rounds(url, cases, args.call_seconds, out)
    per_agent = figures(done)
    # what else the machine was doing: the figures are this machine's, at this load
    load = {"before": load_before, "after": os.getloadavg()}
    print(json.dumps({"load_average": load, "per_agent": per_agent}, indent=1))
    print(table(per_agent))
    print("eval-local: each round's report and page are under", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
