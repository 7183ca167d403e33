"""What /overview shows beside the queue and the conversation: the pipeline by stage and each
recent campaign's funnel (issue 20 item 2; ``GET /pipeline``, ``GET /campaigns`` and its live
stream ``GET /campaigns/events``).

Every number is SQL's (``colony.store.insights.pipeline``, ``colony.store.insights.funnels``), read
under the caller's org scope; this module orders the stages and makes the rows JSON. Names are the
org's own text (a deal's name, a campaign's): the page renders them as text, never markup.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, get_args

from colony.contracts.deals import Stage
from colony.flows.deps import FlowDeps
from colony.store.insights import funnels as funnel_store
from colony.store.insights import pipeline as pipeline_store

TOP_DEALS = 3  # the largest deals named under each stage
RECENT_CAMPAIGNS = 8
STAGE_ORDER: tuple[str, ...] = get_args(Stage)


def _money(value: Any) -> float:
    return float(value) if isinstance(value, Decimal | int | float) else 0.0


def _stage_rank(stage: str) -> tuple[int, str]:
    # Known stages in the sales order; any other (an import may bring one) after, by name.
    known = STAGE_ORDER.index(stage) if stage in STAGE_ORDER else len(STAGE_ORDER)
    return known, stage


def pipeline(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """``{"stages": [{stage, deals, value, top: [{name, value}]}], "deals", "value"}``:
    every stage that has deals, in the sales order, and the totals."""
    with deps.db.transaction(org_id) as cur:
        rows = pipeline_store.by_stage(cur, TOP_DEALS)
    stages = [
        {
            "stage": str(r["stage"]),
            "deals": int(r["deals"]),
            "value": _money(r["value"]),
            "top": [
                {"name": str(t["name"]), "value": _money(t.get("value"))} for t in r["top"] or []
            ],
        }
        for r in sorted(rows, key=lambda r: _stage_rank(str(r["stage"])))
    ]
    return {
        "stages": stages,
        "deals": sum(s["deals"] for s in stages),
        "value": sum(s["value"] for s in stages),
    }


def funnels(deps: FlowDeps, org_id: str, limit: int = RECENT_CAMPAIGNS) -> dict[str, Any]:
    """``{"stages": [...], "campaigns": [{id, name, angle, tier, status, running,
    progress: {done, total} | None, created_at, counts: {stage: n}}]}``, newest first."""
    with deps.db.transaction(org_id) as cur:
        rows = funnel_store.recent(cur, limit)
    return {
        "stages": list(funnel_store.STAGES),
        "campaigns": [
            {
                "id": str(r["id"]),
                "name": str(r["name"]),
                "angle": r["angle"],
                "tier": r["tier"],
                "status": r["status"],
                "running": bool(r["running"]),
                # how far the running runs are: contacts finished, of how many (None: none runs)
                "progress": (
                    {"done": int(r["run_done"]), "total": int(r["run_total"])}
                    if r["running"]
                    else None
                ),
                "created_at": r["created_at"].isoformat(),
                "counts": {s: int(r[s]) for s in funnel_store.STAGES},
            }
            for r in rows
        ],
    }
