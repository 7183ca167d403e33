"""The org's suppression list (issue 18): addresses no message may reach again.

An unsubscribe, a hard bounce or a complaint adds the address (lower-cased); nothing removes
it here. The send step checks it for every message at send time, so a campaign, a sequence or
a re-import drafted before the address was suppressed cannot mail it either.
"""

from __future__ import annotations

from typing import Any, Literal

from colony.store.db import fetch_one

Reason = Literal["unsubscribed", "bounced", "complained"]

ADD = """
INSERT INTO suppressions (org_id, address, reason) VALUES (%s, lower(%s), %s)
ON CONFLICT (org_id, address) DO NOTHING
"""
REASON = "SELECT reason FROM suppressions WHERE address = lower(%s)"


def add(cur: Any, org_id: str, address: str, reason: Reason) -> None:
    cur.execute(ADD, (org_id, address, reason))


def reason_for(cur: Any, address: str) -> str | None:
    """Why ``address`` is suppressed in this org (None: it is not)."""
    row = fetch_one(cur, REASON, (address,))
    return None if row is None else str(row["reason"])
