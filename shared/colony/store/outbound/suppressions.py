"""The org's suppression list (issue 18): addresses no message may reach again.

An unsubscribe, a hard bounce or a complaint adds the address; nothing removes it here. Only
its SHA-256 (of the lower-cased address) is kept, so the list outlives a prospect's erasure
without holding their address. The send step checks it for every message at send time, so a
campaign, a sequence or a re-import drafted before the address was suppressed cannot mail it
either.
"""

from __future__ import annotations

from typing import Any, Literal

from colony.store.db import fetch_all, fetch_one

Reason = Literal["unsubscribed", "bounced", "complained"]

_DIGEST = "encode(sha256(convert_to(lower(%s), 'UTF8')), 'hex')"
ADD = f"""
INSERT INTO suppressions (org_id, address, reason) VALUES (%s, {_DIGEST}, %s)
ON CONFLICT (org_id, address) DO NOTHING
"""
REASON = f"SELECT reason FROM suppressions WHERE address = {_DIGEST}"
SUPPRESSED_CONTACTS = """
SELECT c.id, s.reason FROM contacts c
JOIN suppressions s ON s.address = encode(sha256(convert_to(lower(c.email), 'UTF8')), 'hex')
WHERE c.id = ANY(%s::text[])
"""


def add(cur: Any, org_id: str, address: str, reason: Reason) -> None:
    cur.execute(ADD, (org_id, address, reason))


def reason_for(cur: Any, address: str) -> str | None:
    """Why ``address`` is suppressed in this org (None: it is not)."""
    row = fetch_one(cur, REASON, (address,))
    return None if row is None else str(row["reason"])


def suppressed_contacts(cur: Any, contact_ids: list[str]) -> dict[str, str]:
    """Which of these contacts' addresses are suppressed, and why (contact id → reason)."""
    rows = fetch_all(cur, SUPPRESSED_CONTACTS, (contact_ids,)) if contact_ids else []
    return {str(r["id"]): str(r["reason"]) for r in rows}
