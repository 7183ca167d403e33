"""``colony org usage [--org X] [--month YYYY-MM] [--json]``: what an org spent on model calls
in a month (UTC), in all, by agent, by campaign and by day, with its budget's standing and
the calls whose model has no price (``flows.tenants.usage``, the report /overview's usage
view draws; docs/costs.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from colony.settings import Settings

STATES = {
    "none": "no budget",
    "ok": "within budget",
    "alert": "past the alert share",
    "over": "over budget (no hard cap: campaign work goes on)",
    "capped": "budget spent: new campaign work waits",
}


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.6f}".rstrip("0").rstrip(".")


def _line(name: str, row: dict[str, Any]) -> str:
    cached = f" ({row['tokens_cached']:,} cached)" if row["tokens_cached"] else ""
    unpriced = f", {row['unpriced_calls']:,} unpriced" if row["unpriced_calls"] else ""
    return (
        f"  {name[:40]:<40} {row['calls']:>7,} calls{unpriced}  {row['tokens_in']:>11,} in"
        f"{cached}  {row['tokens_out']:>9,} out  {_usd(row['cost_usd'])}"
    )


def render(report: dict[str, Any]) -> str:
    """The report as the command prints it."""
    total = report["total"]
    lines = [
        f"{report['org_id']} · {report['month']} (UTC) · {total['calls']:,} model calls"
        f" · {_usd(total['cost_usd'])}"
    ]
    budget = report["budget"]
    if budget and budget["monthly_usd"] is not None:
        share = f"{budget['share']:.1%}" if budget["share"] is not None else "—"
        lines.append(
            f"budget: {_usd(budget['monthly_usd'])} a month, alert at"
            f" {budget['alert_share']:.0%}, {'hard cap' if budget['hard_cap'] else 'no hard cap'}"
            f"; spent {share}: {STATES[budget['state']]}"
            + (f"; {budget['held']:,} campaign steps waiting" if budget["held"] else "")
        )
    elif budget:
        lines.append("budget: none set (`colony org settings ORG --set FILE` sets one)")
    if report["unpriced"]:
        models = ", ".join(f"{u['model']} ({u['calls']:,})" for u in report["unpriced"])
        lines.append(
            f"unpriced calls: {total['unpriced_calls']:,}, of {models}: their cost is unknown"
            " and not in the totals (COLONY_PRICES_FILE can price them)"
        )
    for alert in report["alerts"]:
        lines.append(
            f"alert: {alert['kind']} at {_usd(alert['spent_usd'])} of"
            f" {_usd(alert['budget_usd'])}, {alert['raised_at'][:16]}"
            + ("" if alert["delivered"] else " (kept until notifications deliver it)")
        )
    lines.append("by agent")
    lines += [_line(f"{a['agent_id']} {a['agent'] or ''}", a) for a in report["by_agent"]]
    lines.append("by campaign")
    for c in report["by_campaign"]:
        waiting = f" [{c['held']} waiting]" if c.get("held") else ""
        lines.append(_line((c["name"] or "(no campaign)") + waiting, c))
    lines.append("by day")
    lines += [_line(d["day"], d) for d in report["days"]]
    return "\n".join(lines)


def cmd_usage(settings: Settings, args: argparse.Namespace) -> int:
    from colony.flows.tenants import usage
    from colony.local.db import connect_factory
    from colony.local.demo import read_json
    from colony.runtime.deps import build_deps
    from colony.store import Database

    org = args.org or read_json("org.json")["id"]
    deps = build_deps(settings, db=Database(connect_factory(settings, "app")))
    try:
        report = usage.report(deps, org, args.month)
    finally:
        deps.db.close()
    text = json.dumps(report, indent=2, sort_keys=True) if args.json else render(report)
    print(text, flush=True)
    return 0


def add_commands(org: Any) -> None:
    """Register ``usage`` under ``colony org``."""
    command = org.add_parser("usage", help="what an org spent on model calls in a month")
    command.add_argument("--org", help="org id (default: the demo org)")
    command.add_argument("--month", help="YYYY-MM, UTC (default: the current month)")
    command.add_argument("--json", action="store_true", help="the whole report as JSON")
    command.set_defaults(run=cmd_usage)
