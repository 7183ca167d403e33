"""The people of an org (``org_members``, migration 0050): who they are in Clerk, their
role, where a notification reaches them, and whether they are still in the org.

Every function takes a cursor from ``Database.transaction(org_id)``: RLS scopes it to the org,
so another org's people are not found at all."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from colony.store.rows import fetch_all, fetch_one

JOIN = """
INSERT INTO org_members (org_id, user_id, role, email, name)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (org_id, user_id) DO UPDATE
SET role = EXCLUDED.role, email = EXCLUDED.email, name = EXCLUDED.name,
    status = 'active', left_at = NULL, updated_at = now()
"""
LEAVE = """
UPDATE org_members SET status = 'left', left_at = now(), updated_at = now()
WHERE user_id = %s AND status = 'active'
"""
COLUMNS = "user_id, role, email, name, status, joined_at, left_at"
ONE = f"SELECT {COLUMNS} FROM org_members WHERE user_id = %s"
ACTIVE = f"SELECT {COLUMNS} FROM org_members WHERE status = 'active' ORDER BY joined_at, user_id"


@dataclass(frozen=True, slots=True)
class Member:
    user_id: str
    role: str
    email: str | None
    name: str
    status: str
    joined_at: datetime
    left_at: datetime | None

    @property
    def active(self) -> bool:
        return self.status == "active"


def join(
    cur: Any, org_id: str, user_id: str, role: str, email: str | None = None, name: str = ""
) -> None:
    """Keep a person of the org (a new member, a changed role or address, or one who came
    back after leaving)."""
    cur.execute(JOIN, (org_id, user_id, role, email, name))


def leave(cur: Any, user_id: str) -> bool:
    """Mark a person as gone from the org; False when they were not an active member."""
    cur.execute(LEAVE, (user_id,))
    return bool(cur.rowcount)


def get(cur: Any, user_id: str) -> Member | None:
    """One person of the org, active or not; None when the org never had them."""
    row = fetch_one(cur, ONE, (user_id,))
    return Member(**row) if row else None


def active(cur: Any) -> list[Member]:
    """The org's active people, in the order they joined."""
    return [Member(**row) for row in fetch_all(cur, ACTIVE)]
