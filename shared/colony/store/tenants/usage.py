"""What an org spends: its month's totals by day, agent and campaign, its standing against its
budget, and the budget alerts it raised.

All of it is read from ``llm_usage_daily``, which migration 0048's trigger adds each
``llm_calls`` row to as it is written, so a month is a few hundred rows however many calls
it took, and its totals outlive the calls (an org may keep ``llm_calls`` for days only).
Days and months are UTC. A month is given as its first day, or None for the current month
(the database's clock, the one that dated the calls).

Every function takes a cursor from ``Database.transaction(org_id)``: row-level security
scopes it, so no query filters on org by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

# The month's first day: the one asked for, else the current one.
_MONTH = "(SELECT coalesce(%s::date, date_trunc('month', now() AT TIME ZONE 'UTC')::date) AS start)"

# The month's totals in one pass, at each grain the report shows: per day and agent, per day
# and campaign, per day, per agent, per campaign and in all. ``grain`` says which: the
# GROUPING() bits of (day, agent, campaign), so a NULL campaign that means "for no campaign"
# is told apart from one that means "all campaigns".
REPORT = f"""
SELECT GROUPING(u.day, u.agent_id, u.campaign_id) AS grain,
       u.day, u.agent_id, u.campaign_id,
       sum(u.calls)::bigint AS calls, sum(u.unpriced_calls)::bigint AS unpriced_calls,
       sum(u.tokens_in)::bigint AS tokens_in, sum(u.tokens_cached)::bigint AS tokens_cached,
       sum(u.tokens_out)::bigint AS tokens_out, sum(u.cost_usd) AS cost_usd
FROM llm_usage_daily u, {_MONTH} m
WHERE u.day >= m.start AND u.day < m.start + interval '1 month'
GROUP BY GROUPING SETS ((u.day, u.agent_id), (u.day, u.campaign_id), (u.day), (u.agent_id),
                        (u.campaign_id), ())
ORDER BY grain, u.day NULLS FIRST, cost_usd DESC, u.agent_id, u.campaign_id
"""
# Which bits of ``grain`` are set for each grouping set (1: grouped away).
GRAINS = {
    0b001: "day_agent",
    0b010: "day_campaign",
    0b011: "day",
    0b101: "agent",
    0b110: "campaign",
    0b111: "total",
}
UNPRICED_MODELS = f"""
SELECT u.model, sum(u.unpriced_calls)::bigint AS calls
FROM llm_usage_daily u, {_MONTH} m
WHERE u.day >= m.start AND u.day < m.start + interval '1 month' AND u.unpriced_calls > 0
GROUP BY u.model ORDER BY calls DESC, u.model
"""
CAMPAIGN_NAMES = "SELECT id, name FROM campaigns WHERE id = ANY(%s::text[])"
MONTH_START = f"SELECT m.start FROM {_MONTH} m"
# The current month's spend against the org's budget (no settings row: no budget), and how
# much campaign work waits for it. One round trip: the specialists read it before each new
# step of a campaign.
STANDING = f"""
SELECT m.start AS month, s.budget_monthly_usd,
       coalesce(s.budget_alert_share, 0.8) AS alert_share,
       coalesce(s.budget_hard_cap, true) AS hard_cap,
       (SELECT coalesce(sum(u.cost_usd), 0) FROM llm_usage_daily u
        WHERE u.day >= m.start AND u.day < m.start + interval '1 month') AS spent_usd,
       (SELECT coalesce(sum(u.unpriced_calls), 0)::bigint FROM llm_usage_daily u
        WHERE u.day >= m.start AND u.day < m.start + interval '1 month') AS unpriced_calls,
       (SELECT count(*) FROM budget_holds h WHERE h.released_at IS NULL) AS held
FROM {_MONTH} m LEFT JOIN org_settings s ON true
"""
ALERTS = """
SELECT kind, spent_usd, budget_usd, alert_share, hard_cap, raised_at, delivered_at
FROM budget_alerts WHERE month = %s ORDER BY raised_at, id
"""


def month_start(cur: Any, month: date | None) -> date:
    """``month``'s first day, or the current month's (UTC)."""
    row = fetch_one(cur, MONTH_START, (month,))
    assert row is not None
    return row["start"]


def totals(cur: Any, month: date | None) -> list[Row]:
    """The month's totals at every grain (``REPORT``), each row with its ``grain`` named."""
    rows = fetch_all(cur, REPORT, (month,))
    for row in rows:
        row["grain"] = GRAINS[int(row["grain"])]
    return rows


def unpriced_models(cur: Any, month: date | None) -> list[Row]:
    """The models whose calls in the month had no price, with how many calls each."""
    return fetch_all(cur, UNPRICED_MODELS, (month,))


def campaign_names(cur: Any, campaign_ids: Sequence[str]) -> dict[str, str]:
    rows = fetch_all(cur, CAMPAIGN_NAMES, (list(campaign_ids),))
    return {str(r["id"]): str(r["name"]) for r in rows}


def standing(cur: Any) -> Row:
    """The current month, the org's budget (``budget_monthly_usd`` None: none), what it has
    spent, how many of its calls had no price, and how much campaign work is held."""
    row = fetch_one(cur, STANDING, (None,))
    assert row is not None  # the month's one row, with or without settings
    return row


def alerts(cur: Any, month: date) -> list[Row]:
    """The budget alerts raised in ``month`` (its first day), oldest first."""
    return fetch_all(cur, ALERTS, (month,))
