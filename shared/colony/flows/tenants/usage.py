"""What an org spends, as `colony org usage` prints it and /overview's usage view draws it: a
month's totals (UTC) in all, by agent, by campaign and by day (each day by agent and by
campaign too), the models it called that the price table does not name, and, for the
current month, where the spend stands against the org's budget, what waits for it and the
alerts it raised (docs/costs.md).

Money is USD, to the millionth of a dollar; tokens are the providers' own counts (cached
input is part of input). A call without a price counts in ``calls`` and ``unpriced_calls``
and adds nothing to ``cost_usd``: its cost is unknown, not zero.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.tenants.budget import money, standing_in
from colony.registry.agents import AGENTS
from colony.store import orgdata
from colony.store.db import Row
from colony.store.tenants import budget_holds, usage

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_COUNTS = ("calls", "unpriced_calls", "tokens_in", "tokens_cached", "tokens_out")


def parse_month(text: str | None) -> date | None:
    """``YYYY-MM`` as the month's first day (None: the current month)."""
    if text is None or not text.strip():
        return None
    found = _MONTH.match(text.strip())
    if not found or not 1 <= int(found.group(2)) <= 12 or int(found.group(1)) < 2000:
        raise ValidationFailed(f"month {text[:20]!r} is not a month written YYYY-MM")
    return date(int(found.group(1)), int(found.group(2)), 1)


def _amounts(row: Row | None) -> dict[str, Any]:
    row = row or {}
    counts = {name: int(row.get(name) or 0) for name in _COUNTS}
    return {**counts, "cost_usd": money(row.get("cost_usd")) or 0.0}


def _agent(row: Row) -> dict[str, Any]:
    agent = AGENTS.get(str(row["agent_id"]))
    return {"agent_id": row["agent_id"], "agent": agent.name if agent else None, **_amounts(row)}


def report(deps: FlowDeps, org_id: str, month: str | None = None) -> dict[str, Any]:
    """The org's spend in ``month`` (``YYYY-MM``; default the current one)."""
    asked = parse_month(month)
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        start = usage.month_start(cur, asked)
        rows = usage.totals(cur, start)
        unpriced = usage.unpriced_models(cur, start)
        ids = sorted({str(r["campaign_id"]) for r in rows if r["campaign_id"]})
        names = usage.campaign_names(cur, ids)
        now = standing_in(cur)
        current = now.month == start
        waiting = budget_holds.waiting_by_campaign(cur) if current else {}
        alerts = usage.alerts(cur, start)

    def campaign(row: Row) -> dict[str, Any]:
        cid = row["campaign_id"]
        name = names.get(str(cid), cid) if cid else None
        return {"campaign_id": cid, "name": name, **_amounts(row)}

    grains: dict[str, list[Row]] = {}
    for row in rows:
        grains.setdefault(row["grain"], []).append(row)
    days = []
    for day in grains.get("day", []):
        on = day["day"]
        days.append(
            {
                "day": on.isoformat(),
                **_amounts(day),
                "by_agent": [_agent(r) for r in grains.get("day_agent", []) if r["day"] == on],
                "by_campaign": [
                    campaign(r) for r in grains.get("day_campaign", []) if r["day"] == on
                ],
            }
        )
    by_campaign = [campaign(r) for r in grains.get("campaign", [])]
    for entry in by_campaign:
        entry["held"] = waiting.get(str(entry["campaign_id"]), 0) if entry["campaign_id"] else 0
    return {
        "org_id": org_id,
        "month": f"{start:%Y-%m}",
        "total": _amounts(next(iter(grains.get("total", [])), None)),
        "by_agent": [_agent(r) for r in grains.get("agent", [])],
        "by_campaign": by_campaign,
        "days": days,
        "unpriced": [{"model": r["model"], "calls": int(r["calls"])} for r in unpriced],
        "budget": now.as_dict() if current else None,
        "alerts": [
            {
                "kind": a["kind"],
                "spent_usd": money(a["spent_usd"]),
                "budget_usd": money(a["budget_usd"]),
                "raised_at": a["raised_at"].isoformat(),
                "delivered": a["delivered_at"] is not None,
            }
            for a in alerts
        ],
    }
