"""The org's postal address (``org_settings.postal_address``, migration 0057): the footer of
every message it sends. A cursor from ``Database.transaction(org_id)``: RLS scopes it."""

from __future__ import annotations

from typing import Any

from colony.store.db import fetch_one, fetch_value

GET = "SELECT postal_address FROM org_settings"
# Campaign mail approved and not yet sent: what waits while the org has no postal address.
WAITING = "SELECT count(*) FROM outbox WHERE campaign_id IS NOT NULL AND status = 'queued'"
SET = """
INSERT INTO org_settings (org_id, postal_address) VALUES (%s, %s)
ON CONFLICT (org_id) DO UPDATE SET postal_address = EXCLUDED.postal_address, updated_at = now()
"""


def get(cur: Any) -> str | None:
    """The org's postal address (None: it has none yet)."""
    row = fetch_one(cur, GET)
    return None if row is None or not row["postal_address"] else str(row["postal_address"])


def set_address(cur: Any, org_id: str, address: str) -> None:
    cur.execute(SET, (org_id, address))


def campaign_mail_waiting(cur: Any) -> int:
    return int(fetch_value(cur, WAITING) or 0)
