"""Two runs compared case by case: what a template change or another model did.

``compare(a, b)`` pairs the cases both reports hold by id and groups them by agent. For each
agent it says what changed between the runs (the template hash, the model, both or neither)
and lists the cases fixed (failed in A, pass in B), regressed (passed in A, fail in B), and
still failing, with each run's pass rate over the cases both ran; cases only one run has are
counted apart. ``render`` writes that as text for a terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _by_id(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c["id"]: c for c in report["cases"]}


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    left, right = _by_id(a), _by_id(b)
    shared = [i for i in left if i in right]
    agents: dict[str, dict[str, Any]] = {}
    for case_id in shared:
        x, y = left[case_id], right[case_id]
        entry = agents.setdefault(
            x["agent"],
            {
                "a": {"template": x["template"], "model": x["model"], "passed": 0},
                "b": {"template": y["template"], "model": y["model"], "passed": 0},
                "cases": 0,
                "fixed": [],
                "regressed": [],
                "still_failing": [],
            },
        )
        entry["cases"] += 1
        entry["a"]["passed"] += bool(x["passed"])
        entry["b"]["passed"] += bool(y["passed"])
        if x["passed"] and not y["passed"]:
            entry["regressed"].append(case_id)
        elif y["passed"] and not x["passed"]:
            entry["fixed"].append(case_id)
        elif not x["passed"]:
            entry["still_failing"].append(case_id)
    for entry in agents.values():
        changed = [k for k in ("template", "model") if entry["a"][k] != entry["b"][k]]
        entry["changed"] = " and ".join(changed) or "nothing (same template and model)"
        for side in ("a", "b"):
            entry[side]["pass_rate"] = round(entry[side]["passed"] / entry["cases"], 4)
    return {
        "a": a["run"].get("id"),
        "b": b["run"].get("id"),
        "shared": len(shared),
        "only_a": sorted(set(left) - set(right)),
        "only_b": sorted(set(right) - set(left)),
        "agents": dict(sorted(agents.items())),
        "regressed": sum(len(e["regressed"]) for e in agents.values()),
        "fixed": sum(len(e["fixed"]) for e in agents.values()),
    }


def render(diff: Mapping[str, Any], *, listed: int = 10) -> str:
    lines = [
        f"A {diff['a']} → B {diff['b']}: {diff['shared']} cases in both"
        f" ({len(diff['only_a'])} only in A, {len(diff['only_b'])} only in B);"
        f" {diff['fixed']} fixed, {diff['regressed']} regressed"
    ]
    for agent, e in diff["agents"].items():
        a, b = e["a"], e["b"]
        lines.append(
            f"{agent}: {100 * a['pass_rate']:.1f}% → {100 * b['pass_rate']:.1f}% of {e['cases']};"
            f" changed: {e['changed']} ({a['template']} × {a['model']} → {b['template']} ×"
            f" {b['model']})"
        )
        for kind in ("regressed", "fixed"):
            ids = e[kind]
            if ids:
                more = f" … and {len(ids) - listed} more" if len(ids) > listed else ""
                lines.append(f"  {kind}: {', '.join(ids[:listed])}{more}")
    return "\n".join(lines)
