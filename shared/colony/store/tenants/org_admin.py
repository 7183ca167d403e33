"""What an org's admins replace: the ICP definition (a new version), the sequence library
(ENT-004) and the org's settings (``org_settings``).

Every function takes a cursor from ``Database.transaction(org_id)``: row-level security
scopes it, so none of these queries filters on org by itself.
"""

from __future__ import annotations

import json
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

# An org's budget as the settings keep it: (monthly USD or None, alert share, hard cap).
Budget = tuple[float | None, float, bool]

ICP = """
SELECT version, description, rubric, anti_icp_rules, tiers, created_at
FROM icp_definitions WHERE active
"""
# The active version is switched off before the new one is written: at most one is active
# (icp_definitions_one_active), and old versions stay for the record.
DEACTIVATE_ICP = "UPDATE icp_definitions SET active = false WHERE active"
INSERT_ICP = """
INSERT INTO icp_definitions (org_id, version, description, rubric, anti_icp_rules, tiers, active)
SELECT %s, coalesce(max(version), 0) + 1, %s, %s::jsonb, %s::jsonb, %s::jsonb, true
FROM icp_definitions
RETURNING version
"""
SEQUENCES = """
SELECT name, angle, tier, step, channel, delay_days, guidance FROM sequences
ORDER BY angle, tier, step
"""
CLEAR_SEQUENCES = "DELETE FROM sequences"
INSERT_STEP = """
INSERT INTO sequences (org_id, name, angle, tier, step, channel, delay_days, guidance)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
"""
SETTINGS = """
SELECT competitors, daily_send_cap, per_domain_hourly_cap, sequence_approval,
       research_enabled, mail_from, budget_monthly_usd, budget_alert_share, budget_hard_cap,
       updated_at
FROM org_settings
"""
UPSERT_SETTINGS = """
INSERT INTO org_settings
    (org_id, competitors, daily_send_cap, per_domain_hourly_cap, sequence_approval,
     research_enabled, mail_from, budget_monthly_usd, budget_alert_share, budget_hard_cap)
VALUES (%s, %s::jsonb, %s, %s, %s, %s, %s, %s::numeric, %s::numeric, %s)
ON CONFLICT (org_id) DO UPDATE SET competitors = EXCLUDED.competitors,
    daily_send_cap = EXCLUDED.daily_send_cap,
    per_domain_hourly_cap = EXCLUDED.per_domain_hourly_cap,
    sequence_approval = EXCLUDED.sequence_approval,
    research_enabled = EXCLUDED.research_enabled, mail_from = EXCLUDED.mail_from,
    budget_monthly_usd = EXCLUDED.budget_monthly_usd,
    budget_alert_share = EXCLUDED.budget_alert_share,
    budget_hard_cap = EXCLUDED.budget_hard_cap, updated_at = now()
"""


def icp(cur: Any) -> Row | None:
    return fetch_one(cur, ICP)


def replace_icp(cur: Any, org_id: str, definition: dict[str, Any]) -> int:
    """Write ``definition`` as the org's new active version; its number."""
    cur.execute(DEACTIVATE_ICP)
    params = (
        org_id,
        definition["description"],
        json.dumps(definition["rubric"]),
        json.dumps(definition["anti_icp_rules"]),
        json.dumps(definition["tiers"]),
    )
    row = fetch_one(cur, INSERT_ICP, params)
    assert row is not None
    return int(row["version"])


def sequence_steps(cur: Any) -> list[Row]:
    return fetch_all(cur, SEQUENCES)


def replace_sequences(cur: Any, org_id: str, sequences: list[dict[str, Any]]) -> int:
    """Replace the whole library; the steps written."""
    cur.execute(CLEAR_SEQUENCES)
    written = 0
    for s in sequences:
        for number, step in enumerate(s["steps"], start=1):
            cur.execute(
                INSERT_STEP,
                (
                    org_id,
                    s["name"],
                    s["angle"],
                    s["tier"],
                    number,
                    step["channel"],
                    step["delay_days"],
                    step["guidance"],
                ),
            )
            written += 1
    return written


def settings(cur: Any) -> Row | None:
    return fetch_one(cur, SETTINGS)


def replace_settings(
    cur: Any,
    org_id: str,
    competitors: list[str],
    daily_cap: int,
    per_domain_hourly: int,
    sequence_approval: str = "each_step",
    research_enabled: bool = True,
    mail_from: str | None = None,
    budget: Budget = (None, 0.8, True),
) -> None:
    """``budget``: (monthly USD or None for none, alert share, hard cap)."""
    monthly, share, hard_cap = budget
    params = (
        org_id,
        json.dumps(competitors),
        daily_cap,
        per_domain_hourly,
        sequence_approval,
        research_enabled,
        mail_from,
        None if monthly is None else str(monthly),
        str(share),
        hard_cap,
    )
    cur.execute(UPSERT_SETTINGS, params)


def research_enabled(cur: Any) -> bool:
    """Whether the org has its prospects' companies researched (on without a settings row)."""
    row = fetch_one(cur, SETTINGS)
    return True if row is None else bool(row["research_enabled"])
