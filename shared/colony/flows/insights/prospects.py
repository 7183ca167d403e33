"""Prospects as records (issue 34 item 1): the list a person filters, paginated on the server,
and one prospect's page: its fields, its ICP score with AGT-004's reasons, its signals with
their quotes and sources, its sequences and next step, every message sent and the replies
to each (threaded under it), and the decisions about it.

Reading only: what a person does to a prospect goes through the approval queue and the
admin API. Replies, quotes and enrichment are the outside world's text: they are returned as
data for the page to show as text (``colony.chat.records.js``), never as markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from colony.contracts.common import TIERS
from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.store.insights import prospects as repo

PAGE = 50
STATUSES = ("active", "completed", "stopped", "none")
_TEXT = 200


def filters_from(args: Mapping[str, str]) -> repo.Filters:
    """The list's filters from a query string, each checked (a bad one names itself)."""
    tier = args.get("tier") or None
    if tier is not None and tier not in TIERS:
        raise ValidationFailed(f"tier must be one of {', '.join(TIERS)}")
    status = args.get("status") or None
    if status is not None and status not in STATUSES:
        raise ValidationFailed(f"status must be one of {', '.join(STATUSES)}")
    replied = {"": None, "yes": True, "no": False}.get(args.get("replied", ""), "bad")
    if replied == "bad":
        raise ValidationFailed("replied must be yes or no")
    low, high = _score(args, "min_score"), _score(args, "max_score")
    if low is not None and high is not None and low > high:
        raise ValidationFailed("min_score must not be above max_score")
    return repo.Filters(
        tier=tier,
        min_score=low,
        max_score=high,
        status=status,
        campaign=_short(args, "campaign"),
        signal=_short(args, "signal"),
        replied=replied if isinstance(replied, bool) else None,
        text=_short(args, "q"),
    )


def listing(deps: FlowDeps, org_id: str, filters: repo.Filters, offset: int = 0) -> dict[str, Any]:
    """A page of the org's prospects matching ``filters`` (best ICP score first), how many
    match in all, and where the next page starts."""
    if not 0 <= offset <= 10_000_000:
        raise ValidationFailed("offset must be a whole number from 0")
    with deps.db.transaction(org_id) as cur:
        rows, total = repo.page(cur, filters, PAGE, offset)
        names = repo.campaign_names(cur, sorted({c for r in rows for c in r["campaign_ids"]}))
    return {
        "total": total,
        "next_offset": offset + PAGE if offset + PAGE < total else None,
        "prospects": [
            {
                **{k: r[k] for k in ("id", "name", "title", "company", "email", "icp_score")},
                "tier": r["icp_tier"],
                "recommendation": r["icp_recommendation"],
                "sequence_status": r["sequence_status"] or "none",
                "replied": r["replied"],
                "signal_types": sorted(r["signal_types"]),
                "campaigns": [{"id": c, "name": names.get(c)} for c in sorted(r["campaign_ids"])],
            }
            for r in rows
        ],
    }


def prospect(deps: FlowDeps, org_id: str, contact_id: str) -> dict[str, Any]:
    """One prospect's page; another org's prospect is not found."""
    if not contact_id or len(contact_id) > _TEXT:
        raise ValidationFailed("a prospect id is 1 to 200 characters")
    with deps.db.transaction(org_id) as cur:
        found = repo.prospect(cur, contact_id)
    if found is None:
        raise NotFound(f"there is no prospect {contact_id!r}")
    contact, qualified = found["contact"], found["qualified"]
    why = (qualified or {}).get("output") or {}
    return plain(
        {
            "prospect": {
                **{k: v for k, v in contact.items() if not k.startswith("icp_")},
                "icp": {
                    "score": contact["icp_score"],
                    "tier": contact["icp_tier"],
                    "recommendation": contact["icp_recommendation"],
                    "disqualifiers": contact["icp_disqualifiers"],
                    "reasoning": why.get("reasoning"),
                    "dimension_scores": why.get("dimension_scores"),
                    "tier_rule": why.get("tier_rule"),
                    "scored_at": qualified["created_at"] if qualified else None,
                },
            },
            "signals": found["signals"],
            "sequences": [_sequence(s) for s in found["sequences"]],
            "messages": found["messages"],
            "trail": found["trail"],
        }
    )


def _sequence(row: Mapping[str, Any]) -> dict[str, Any]:
    active = row["status"] == "active"
    return {
        **row,
        "next_step": row["step"] if active else None,
        "next_due_at": row["next_due_at"] if active else None,
    }


def _score(args: Mapping[str, str], name: str) -> int | None:
    raw = args.get(name) or None
    if raw is None:
        return None
    if not raw.isdigit() or not 0 <= int(raw) <= 100:
        raise ValidationFailed(f"{name} must be a whole number from 0 to 100")
    return int(raw)


def _short(args: Mapping[str, str], name: str) -> str | None:
    value = (args.get(name) or "").strip()
    if len(value) > _TEXT:
        raise ValidationFailed(f"{name} is at most {_TEXT} characters")
    return value or None


def plain(value: Any) -> Any:
    """Dates and times as ISO text and numerics (money) as numbers, all the way down: what
    the page reads is JSON."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value
