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
# Clerk's events, applied in Clerk's order whatever order Svix delivers them in: an event
# older than the last one applied (``clerk_at``) changes nothing. A deletion that arrives
# before its creation keeps the person as 'left', so the late creation cannot bring them in.
CLERK_JOIN = """
INSERT INTO org_members (org_id, user_id, role, email, name, clerk_at)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, user_id) DO UPDATE
SET role = EXCLUDED.role, email = EXCLUDED.email, name = EXCLUDED.name,
    status = 'active', left_at = NULL, updated_at = now(), clerk_at = EXCLUDED.clerk_at
WHERE org_members.clerk_at IS NULL OR org_members.clerk_at <= EXCLUDED.clerk_at
RETURNING user_id
"""
CLERK_LEAVE = """
INSERT INTO org_members (org_id, user_id, role, email, name, status, left_at, clerk_at)
VALUES (%s, %s, %s, %s, %s, 'left', now(), %s)
ON CONFLICT (org_id, user_id) DO UPDATE
SET status = 'left', left_at = coalesce(org_members.left_at, now()), updated_at = now(),
    clerk_at = EXCLUDED.clerk_at
WHERE org_members.clerk_at IS NULL OR org_members.clerk_at <= EXCLUDED.clerk_at
RETURNING user_id
"""
ADMIN_ROLES = ("org:admin", "admin")  # Clerk's role key today, and its older name
COLUMNS = "user_id, role, email, name, status, joined_at, left_at"
ONE = f"SELECT {COLUMNS} FROM org_members WHERE user_id = %s"
ACTIVE = f"SELECT {COLUMNS} FROM org_members WHERE status = 'active' ORDER BY joined_at, user_id"
EVERYONE = f"SELECT {COLUMNS} FROM org_members ORDER BY status, joined_at, user_id"


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


def clerk_join(
    cur: Any, org_id: str, user_id: str, role: str, email: str | None, name: str, at: datetime
) -> bool:
    """A membership as Clerk had it at ``at``; False when a later event was applied already."""
    params = (org_id, user_id, role, email, name, at)
    return fetch_one(cur, CLERK_JOIN, params) is not None


def clerk_leave(
    cur: Any, org_id: str, user_id: str, role: str, email: str | None, name: str, at: datetime
) -> bool:
    """A membership Clerk deleted at ``at``; False when a later event was applied already."""
    params = (org_id, user_id, role, email, name, at)
    return fetch_one(cur, CLERK_LEAVE, params) is not None


def get(cur: Any, user_id: str) -> Member | None:
    """One person of the org, active or not; None when the org never had them."""
    row = fetch_one(cur, ONE, (user_id,))
    return Member(**row) if row else None


def active(cur: Any) -> list[Member]:
    """The org's active people, in the order they joined."""
    return [Member(**row) for row in fetch_all(cur, ACTIVE)]


def everyone(cur: Any) -> list[Member]:
    """The org's people, active first (then those who left), each in the order they joined."""
    return [Member(**row) for row in fetch_all(cur, EVERYONE)]
