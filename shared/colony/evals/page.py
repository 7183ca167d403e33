"""A run's report as one static HTML page: no script, no external file, every value escaped.

The page shows the run (provider, model, when, the sets' digest), the gate and what fell,
each agent's pass rate beside its threshold with tokens, cost and latency p50/p95, the pass
rate of each property per agent, the judge's agreement with the labelled answers, and every
failed case with its inputs, its output and the properties that did not hold.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1d1d1f;max-width:72rem}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}
th{background:#f3f3f3}.pass{color:#0a6b2d}.fail{color:#a30d0d;font-weight:600}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f7;padding:.5rem;max-height:24rem;overflow:auto}
details{margin:.3rem 0;border-left:3px solid #a30d0d;padding-left:.6rem}summary{cursor:pointer}
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _rate(value: Any) -> str:
    return "–" if value is None else f"{100 * float(value):.1f}%"


def _row(cells: list[Any], head: bool = False) -> str:
    tag = "th" if head else "td"
    return "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"


def _json(value: Any) -> str:
    return f"<pre>{_e(json.dumps(value, indent=1, ensure_ascii=False, default=str))}</pre>"


def _agents(report: Mapping[str, Any]) -> str:
    limits = {a: t["pass_rate"] for a, t in report["gate"]["thresholds"].items()}
    head = [
        "agent",
        "cases",
        "pass rate",
        "threshold",
        "tokens in/out",
        "cost (USD)",
        "latency p50 / p95 (ms)",
        "template × model",
    ]
    rows = [_row(head, head=True)]
    for agent, s in report["agents"].items():
        ok = (s["pass_rate"] or 0) >= limits.get(agent, 0)
        rows.append(
            _row(
                [
                    _e(agent),
                    _e(s["cases"]),
                    f"<span class={'pass' if ok else 'fail'}>{_rate(s['pass_rate'])}</span>",
                    _rate(limits.get(agent)),
                    f"{_e(s['tokens_in'])} / {_e(s['tokens_out'])}",
                    _e(s["cost_usd"] if s["cost_usd"] is not None else "unknown"),
                    f"{_e(s['latency_ms']['p50'])} / {_e(s['latency_ms']['p95'])}",
                    f"{_e(s['template'])} × {_e(s['model'])}",
                ]
            )
        )
    return "<table>" + "".join(rows) + "</table>"


def _properties(report: Mapping[str, Any]) -> str:
    rows = [_row(["agent", "property", "passed", "rate"], head=True)]
    for agent, s in report["agents"].items():
        for name, p in s["properties"].items():
            rows.append(
                _row([_e(agent), _e(name), f"{p['passed']} / {p['total']}", _rate(p["rate"])])
            )
    return "<table>" + "".join(rows) + "</table>"


def _judge(judge: Mapping[str, Any] | None) -> str:
    if not judge:
        return "<p>No judge ran: rubric properties were not graded.</p>"
    verdict = "trusted" if judge["trusted"] else "NOT trusted: its rubric grades are not counted"
    text = (
        f"<p>Judge <b>{_e(judge['judge'])}</b> agreed with {_e(judge['labelled'])} labelled"
        f" answers {_rate(judge['agreement'])} of the time (kappa {_e(judge['kappa'])});"
        f" at least {_rate(judge['min_agreement'])} is needed: <b>{_e(verdict)}</b>.</p>"
    )
    wrong = judge.get("disagreements") or []
    if wrong:
        items = "".join(
            f"<li>{_e(w['id'])}: labelled {_e(w['label'])}; the judge said {_e(w['judge'])}</li>"
            for w in wrong
        )
        text += f"<ul>{items}</ul>"
    return text


def _failures(report: Mapping[str, Any]) -> str:
    failed = [c for c in report["cases"] if not c["passed"]]
    if not failed:
        return "<p>Every case passed.</p>"
    parts = []
    for c in failed:
        broken = [p for p in c["properties"] if not p["passed"]]
        listed = "".join(
            f"<li>{_e(p['check'])}{'' if p['counted'] else ' (not counted)'}:"
            f" {_e(p['detail'])}</li>"
            for p in broken
        )
        answer = (
            c["output"]
            if c["output"] is not None
            else (c["tool_calls"] or c.get("error_detail") or c["error"])
        )
        parts.append(
            f"<details><summary>{_e(c['id'])}: {_e(c['title'])} "
            f"<span class=fail>({_e(c['status'])}, expected {_e(c['expected'])})</span></summary>"
            f"<ul>{listed}</ul><h4>Output</h4>{_json(answer)}<h4>Inputs</h4>{_json(c.get('inputs'))}"
            f"<h4>What the flow recorded</h4>{_json(c['facts'])}</details>"
        )
    return "".join(parts)


def _head(report: Mapping[str, Any]) -> str:
    run, summary = report["run"], report["summary"]
    cost = summary["cost_usd"] if summary["cost_usd"] is not None else "unknown"
    where = f" · {_e(run.get('base_url'))}" if run.get("base_url") else ""
    lat = summary["latency_ms"]
    return (
        f"<h1>Eval run {_e(run.get('id'))}</h1>"
        f"<p>{_e(run.get('provider'))} · {_e(run.get('model'))}{where} · started"
        f" {_e(run.get('started_at'))} · {_e(run.get('duration_s'))} s"
        f" · sets {_e(run.get('sets'))}</p>"
        f"<p>{_e(summary['passed'])} of {_e(summary['cases'])} cases passed"
        f" ({_rate(summary['pass_rate'])}); tokens {_e(summary['tokens_in'])} in,"
        f" {_e(summary['tokens_out'])} out; cost {_e(cost)} USD;"
        f" latency p50 {_e(lat['p50'])} ms, p95 {_e(lat['p95'])} ms.</p>"
    )


def render(report: Mapping[str, Any]) -> str:
    gate = report["gate"]
    status = "passed" if gate["passed"] else "FELL"
    fallen = ", ".join(
        f"{f['agent']}{' ' + f['property'] if 'property' in f else ''} {_rate(f['pass_rate'])}"
        f" < {_rate(f['threshold'])}"
        for f in gate["fallen"]
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>colony eval {_e(report['run'].get('id'))}</title><style>{STYLE}</style>"
        f"</head><body>{_head(report)}"
        f"<h2>Gate: <span class={'pass' if gate['passed'] else 'fail'}>{status}</span></h2>"
        f"{'<p>' + _e(fallen) + '</p>' if fallen else ''}"
        f"<h2>Agents</h2>{_agents(report)}<h2>Properties</h2>{_properties(report)}"
        f"<h2>Judge</h2>{_judge(report.get('judge'))}<h2>Failures</h2>{_failures(report)}"
        "</body></html>\n"
    )
