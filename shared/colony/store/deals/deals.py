"""ENT-003, deals: the reads the recording, onboarding and Drive flows need, the locks that
order racing writers, and the one update an approved ``deal_update`` makes (CONST-001).

Every function takes the cursor of a transaction opened under the deal's org
(``Database.transaction(org_id)``), so RLS scopes each statement; a deal of another org reads
as missing. A lock lasts until that transaction ends. The list of all deals is
``colony.store.orgdata.deals``.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

EXISTS = "SELECT id FROM deals WHERE id = %s"
LOCK = "SELECT id FROM deals WHERE id = %s FOR UPDATE"
STAGE_FOR_UPDATE = "SELECT id, stage FROM deals WHERE id = %s FOR UPDATE"
UPDATE = """
UPDATE deals SET stage = COALESCE(%s, stage), value = COALESCE(%s, value),
    next_action = COALESCE(%s, next_action), close_date = COALESCE(%s::date, close_date),
    updated_at = now()
WHERE id = %s
"""
WITH_CONTACT = """
SELECT d.id, d.name, d.stage, d.value, d.next_action, d.close_date, d.contact_id,
       c.name AS contact_name, c.title AS contact_title, c.email AS contact_email,
       c.company AS contact_company
FROM deals d LEFT JOIN contacts c ON c.id = d.contact_id WHERE d.id = %s
"""
FOR_KIT = """
SELECT d.id, d.name, d.stage, d.value, d.next_action, d.close_date, c.name AS contact_name,
       c.company, c.enrichment->>'vertical' AS industry, c.enrichment->>'sub_vertical' AS segment
FROM deals d LEFT JOIN contacts c ON c.id = d.contact_id WHERE d.id = %s
"""
# The deal a call was about: the one open deal whose contact's company the title names.
OPEN_FOR_TITLE = """
SELECT d.id FROM deals d JOIN contacts c ON c.id = d.contact_id
WHERE btrim(c.company) <> '' AND strpos(lower(%s), lower(c.company)) > 0
  AND d.stage NOT IN ('closed_won', 'closed_lost')
"""


def exists(cur: Any, deal_id: str) -> bool:
    return fetch_one(cur, EXISTS, (deal_id,)) is not None


def lock(cur: Any, deal_id: str) -> bool:
    """Lock the deal's row (False: not in this org)."""
    return fetch_one(cur, LOCK, (deal_id,)) is not None


def lock_stage(cur: Any, deal_id: str) -> Row | None:
    """The deal's id and stage, its row locked (None: not in this org)."""
    return fetch_one(cur, STAGE_FOR_UPDATE, (deal_id,))


def update(
    cur: Any,
    deal_id: str,
    *,
    stage: str | None,
    value: Decimal | None,
    next_action: str | None,
    close_date: date | None,
) -> None:
    """Set the fields given; a None leaves that field as it is."""
    close = close_date.isoformat() if close_date else None
    cur.execute(UPDATE, (stage, value, next_action, close, deal_id))


def with_contact(cur: Any, deal_id: str) -> Row | None:
    """The deal and its contact's name, title, email and company (None: not in this org)."""
    return fetch_one(cur, WITH_CONTACT, (deal_id,))


def for_kit(cur: Any, deal_id: str) -> Row | None:
    """The deal as an onboarding kit reads it: its fields, its contact's name and company, and
    the company's industry and segment (its enrichment's vertical and sub-vertical)."""
    return fetch_one(cur, FOR_KIT, (deal_id,))


def open_for_title(cur: Any, title: str) -> list[str]:
    """Ids of the open deals whose contact's company ``title`` names (case-insensitive)."""
    return [r["id"] for r in fetch_all(cur, OPEN_FOR_TITLE, (title,))]
