"""Layer 2 reads (org context): the org, ICP definition, contacts, deals, sequence library.

Every function takes a cursor from ``Database.transaction(org_id)``: row-level security
scopes it, so none of these queries filters on org by itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import pg8000.dbapi

from colony.store.db import Row, fetch_all, fetch_one

ACTIVE_ICP = """
SELECT description, rubric, anti_icp_rules, tiers FROM icp_definitions WHERE active
"""
CONTACTS = """
SELECT id, external_id, name, title, email, company, company_domain, enrichment,
       raw_enrichment_html, signals, icp_score, icp_disqualifiers, icp_recommendation,
       created_at, updated_at
FROM contacts ORDER BY external_id NULLS LAST, id
"""
CONTACTS_BY_ID = """
SELECT id, external_id, name, title, email, company, company_domain, enrichment,
       raw_enrichment_html, signals, icp_score, icp_disqualifiers, icp_recommendation,
       created_at, updated_at
FROM contacts WHERE id = ANY(%s) OR external_id = ANY(%s) ORDER BY external_id, id
"""
DEALS = """
SELECT d.id, d.external_id, d.name, d.stage, d.value, d.next_action, d.close_date,
       d.contact_id, c.name AS contact_name, c.company, d.created_at, d.updated_at
FROM deals d LEFT JOIN contacts c ON c.id = d.contact_id
ORDER BY d.external_id NULLS LAST, d.id
"""
SEQUENCE_STEPS = """
SELECT angle, tier, step, channel, delay_days, guidance FROM sequences
WHERE angle = %s AND tier = %s ORDER BY step
"""
# The stage of the contact's deal (its most recently updated one, when it has several).
DEAL_STAGE = """
SELECT stage FROM deals WHERE contact_id = %s ORDER BY updated_at DESC, id LIMIT 1
"""
ORG_NAME = "SELECT name FROM organizations"
ORG = "SELECT id FROM organizations WHERE id = %s"


def active_icp(cur: pg8000.dbapi.Cursor) -> Row | None:
    return fetch_one(cur, ACTIVE_ICP)


def org_exists(cur: pg8000.dbapi.Cursor, org_id: str) -> bool:
    """Whether ``org_id`` has a record (that the transaction's org may see)."""
    return fetch_one(cur, ORG, (org_id,)) is not None


def org_name(cur: pg8000.dbapi.Cursor) -> str | None:
    row = fetch_one(cur, ORG_NAME)
    return str(row["name"]) if row else None


def contacts(cur: pg8000.dbapi.Cursor, ids: Sequence[str] | None = None) -> list[Row]:
    """All contacts, or those whose id or external id is in ``ids``."""
    if ids is None:
        return fetch_all(cur, CONTACTS)
    return fetch_all(cur, CONTACTS_BY_ID, (list(ids), list(ids)))


def deals(cur: pg8000.dbapi.Cursor) -> list[Row]:
    return fetch_all(cur, DEALS)


def sequence_steps(cur: pg8000.dbapi.Cursor, angle: str, tier: str) -> list[Row]:
    """The library's sequence for ``angle`` x ``tier``, step by step (empty: none)."""
    return fetch_all(cur, SEQUENCE_STEPS, (angle, tier))


def deal_stage(cur: pg8000.dbapi.Cursor, contact_id: str) -> str | None:
    """The stage of the contact's deal (None: the contact has no deal)."""
    row = fetch_one(cur, DEAL_STAGE, (contact_id,))
    return str(row["stage"]) if row else None
