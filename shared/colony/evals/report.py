"""One run's report: a JSON document (and from it the HTML page, ``colony.evals.page``).

``build`` summarises the results: pass rate overall, per agent, per property and per tag;
tokens, cost and latency (p50 and p95 over the cases, each case's latency the sum of its
model calls); the judge's agreement with the labelled answers; the gate; and every case with
its outcome and properties, a failed case with its inputs too, so a failure can be read
without the set at hand.

The gate (``gate``) is a pass rate per agent, and optionally the pass rate of a property of
it (``outcome``: the call ended as the case expects, the plumbing): the thresholds of
``gates.json`` (its ``default``, its ``agents``, then its ``providers`` entry for the run's
provider, each overriding the one before) and any pass rate given on the command line. A run
falls when any agent it ran is below a threshold.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from colony.errors import ValidationFailed
from colony.evals.runner import CaseResult

SCHEMA = "colony-eval-report/1"
GATES = Path(__file__).parent / "gates.json"


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0-100) of ``values``."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return round(ordered[rank - 1], 1)


def _totals(results: Sequence[CaseResult]) -> dict[str, Any]:
    costs = [r.cost_usd for r in results]
    latencies = [r.latency_ms for r in results if r.outcome.calls]
    passed = sum(r.passed for r in results)
    return {
        "cases": len(results),
        "passed": passed,
        "pass_rate": round(passed / len(results), 4) if results else None,
        "tokens_in": sum(r.tokens_in for r in results),
        "tokens_out": sum(r.tokens_out for r in results),
        "cost_usd": None if None in costs else round(sum(c or 0.0 for c in costs), 6),
        "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
    }


def _rates(counts: Mapping[str, list[bool]]) -> dict[str, dict[str, Any]]:
    return {
        name: {"passed": sum(v), "total": len(v), "rate": round(sum(v) / len(v), 4)}
        for name, v in sorted(counts.items())
    }


def _agent(results: Sequence[CaseResult]) -> dict[str, Any]:
    props: dict[str, list[bool]] = {}
    tags: dict[str, list[bool]] = {}
    for r in results:
        for p in r.properties:
            if p["counted"]:
                props.setdefault(p["check"], []).append(bool(p["passed"]))
        for tag in r.case.tags:
            tags.setdefault(tag, []).append(r.passed)
    judged = [bool(p["passed"]) for r in results for p in r.properties if p["check"] == "rubric"]
    return {
        **_totals(results),
        "template": results[0].template,
        "model": results[0].model,
        "properties": _rates(props),
        "tags": _rates(tags),
        "rubric": _rates({"rubric": judged}).get("rubric") if judged else None,
    }


Limit = dict[str, Any]  # {"pass_rate": float, "properties": {name: float}}


def _limit(entry: Any) -> Limit:
    """A gates.json entry: a pass rate, or ``{"pass_rate", "properties"}``."""
    if isinstance(entry, int | float):
        return {"pass_rate": float(entry), "properties": {}}
    return {
        "pass_rate": float(entry.get("pass_rate", 0.0)),
        "properties": {k: float(v) for k, v in (entry.get("properties") or {}).items()},
    }


def thresholds(
    agents: Sequence[str],
    provider: str,
    given: Mapping[str, float] | None = None,
    path: Path = GATES,
) -> dict[str, Limit]:
    """Each agent's minimum pass rate, and of any property named (the module docstring)."""
    table = json.loads(path.read_text(encoding="utf-8"))
    own = {**table.get("agents", {}), **table.get("providers", {}).get(provider, {})}
    chosen = {a: _limit(own.get(a, table["default"])) for a in agents}
    for agent, rate in (given or {}).items():
        if agent in chosen:
            chosen[agent]["pass_rate"] = float(rate)
    return chosen


def gate(agents: Mapping[str, Mapping[str, Any]], limits: Mapping[str, Limit]) -> dict[str, Any]:
    fallen = []
    for agent, s in agents.items():
        limit = limits.get(agent) or _limit(0.0)
        if (s["pass_rate"] or 0.0) < limit["pass_rate"]:
            fallen.append(
                {"agent": agent, "pass_rate": s["pass_rate"], "threshold": limit["pass_rate"]}
            )
        for name, least in limit["properties"].items():
            got = (s["properties"].get(name) or {}).get("rate", 0.0)
            if got < least:
                fallen.append(
                    {"agent": agent, "property": name, "pass_rate": got, "threshold": least}
                )
    return {"passed": not fallen, "thresholds": dict(limits), "fallen": fallen}


def _case(r: CaseResult) -> dict[str, Any]:
    o = r.outcome
    record: dict[str, Any] = {
        "id": r.case.id,
        "agent": r.case.agent,
        "title": r.case.title,
        "tags": list(r.case.tags),
        "source": r.case.source,
        "expected": r.case.outcome,
        "status": o.status,
        "passed": r.passed,
        "template": r.template,
        "model": r.model,
        "tokens_in": r.tokens_in,
        "tokens_out": r.tokens_out,
        "latency_ms": r.latency_ms,
        "cost_usd": r.cost_usd,
        "attempts": sum(c.attempts for c in o.calls),
        "calls": len(o.calls),
        "error": o.error,
        "error_detail": o.error_detail,
        "missing": list(o.missing),
        "tool_calls": o.tool_calls,
        "output": o.output,
        "untrusted": list(o.untrusted),
        "facts": o.facts,
        "properties": r.properties,
    }
    if not r.passed:
        record["inputs"] = dict(r.case.inputs)
    return record


def build(
    results: Sequence[CaseResult],
    run: Mapping[str, Any],
    *,
    judge: Mapping[str, Any] | None = None,
    limits: Mapping[str, Limit] | None = None,
) -> dict[str, Any]:
    """The report of one run (``run``: its id, provider, model, times, selection)."""
    by_agent: dict[str, list[CaseResult]] = {}
    for r in results:
        by_agent.setdefault(r.case.agent, []).append(r)
    agents = {a: _agent(rs) for a, rs in sorted(by_agent.items())}
    limits = dict(limits or {})
    return {
        "schema": SCHEMA,
        "run": dict(run),
        "judge": dict(judge) if judge else None,
        "summary": _totals(results),
        "agents": agents,
        "gate": gate(agents, {a: limits.get(a) or _limit(0.0) for a in agents}),
        "cases": [_case(r) for r in results],
    }


def write(report: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=1, ensure_ascii=False, default=str, sort_keys=False)
    path.write_text(text + "\n", encoding="utf-8")


def read(path: Path) -> dict[str, Any]:
    found = json.loads(path.read_text(encoding="utf-8"))
    if found.get("schema") != SCHEMA:
        raise ValidationFailed(f"{path} is not a {SCHEMA} report")
    return dict(found)
