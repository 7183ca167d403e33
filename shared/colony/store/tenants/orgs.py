"""Organisations and the defaults a new one starts with (``organizations``, ``icp_definitions``).

Clerk is where an org is born (``flows.tenants.clerk_orgs``). Each function takes the cursor of a
transaction opened under that org (row-level security scopes the org's own row by ``id``).
"""

from __future__ import annotations

import json
from typing import Any

from colony.store.db import fetch_one

# The name follows Clerk's: an ``organization.updated`` can arrive before its ``.created``
# (Svix does not order deliveries), so both upsert.
UPSERT_ORG = """
INSERT INTO organizations (id, name) VALUES (%s, %s)
ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name
"""
ORG = "SELECT id, name, created_at FROM organizations WHERE id = %s"
# Version 1 is the starting definition; a replace through the admin API writes a new version,
# so DO NOTHING keeps a created event replayed later from resetting the org's own rules.
DEFAULT_ICP = """
INSERT INTO icp_definitions (org_id, version, description, rubric, anti_icp_rules, tiers, active)
SELECT %s, 1, %s, %s::jsonb, '[]'::jsonb, %s::jsonb, true
WHERE NOT EXISTS (SELECT 1 FROM icp_definitions)
"""

DEFAULT_ICP_DESCRIPTION = "Not defined yet: an org admin sets it (PUT /orgs/{org}/icp)."
# Score bands → tiers, the same shape the demo org's ICP uses (demo/icp.json).
DEFAULT_TIERS = [
    {"tier": "T1", "min_score": 80},
    {"tier": "T2", "min_score": 65},
    {"tier": "T3", "min_score": 50},
    {"tier": "T4", "min_score": 35},
    {"tier": "T5", "min_score": 0},
]


def upsert(cur: Any, org_id: str, name: str) -> None:
    cur.execute(UPSERT_ORG, (org_id, name))


def get(cur: Any, org_id: str) -> dict[str, Any] | None:
    return fetch_one(cur, ORG, (org_id,))


def ensure_default_icp(cur: Any, org_id: str) -> bool:
    """The starting ICP definition, unless the org has one; whether it was written."""
    cur.execute(
        DEFAULT_ICP,
        (org_id, DEFAULT_ICP_DESCRIPTION, json.dumps({}), json.dumps(DEFAULT_TIERS)),
    )
    return bool(cur.rowcount == 1)
