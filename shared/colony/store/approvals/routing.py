"""Whose queue an approval item waits in (issue 35): counting a person's own items, handing
a person's items on, following a prospect's or a deal's new owner, and escalating items left
undecided past the org's window to its backup.

An item is routed when it is added (``approvals.ADD``): ``assignee`` is a person,
``assignee_role = 'admin'`` the org's admins, neither the team's. Routing decides where an
item is shown first, never who may decide it: anyone with the right role still can, and the
card says whose it was. Each change of queue notifies ``colony_approvals`` (ids only), so an
open /overview moves the card.

Every function takes the cursor of a transaction opened under the org (RLS scopes it).
"""

from __future__ import annotations

from typing import Any

from colony.store.approvals.approvals import CHANNEL
from colony.store.db import Row, fetch_all, fetch_one, fetch_value

# A person's own waiting items: those routed to them, and the admins' when they are one.
WAITING_FOR = """
SELECT count(*) FROM approval_items a
WHERE a.status = 'pending' AND (a.assignee = %s OR (a.assignee_role = 'admin' AND EXISTS (
    SELECT 1 FROM org_members m WHERE m.user_id = %s AND m.status = 'active'
      AND m.role IN ('org:admin', 'admin'))))
"""
IS_ADMIN = """
SELECT EXISTS (SELECT 1 FROM org_members m WHERE m.user_id = %s AND m.status = 'active'
               AND m.role IN ('org:admin', 'admin'))
"""
QUEUE_OF = "SELECT assignee, assignee_role FROM approval_items WHERE id = %s"
ADMIN_ROLES = ("org:admin", "admin")
# Both at once, for a queue listing: one round trip, not two.
STANDING = f"SELECT ({WAITING_FOR}) AS waiting, ({IS_ADMIN}) AS admin"
HAND_OVER = """
WITH moved AS (
    UPDATE approval_items SET assignee = %s, routed_at = now()
    WHERE status = 'pending' AND assignee = %s RETURNING id, org_id
)
SELECT count(pg_notify(%s, org_id || ':' || id)) FROM moved
"""
# A prospect's (or a deal's) items follow its new owner, unless escalated already: the
# escalation put them where they are on purpose.
FOLLOW_CONTACT = """
WITH moved AS (
    UPDATE approval_items SET assignee = %s, routed_at = now()
    WHERE status = 'pending' AND escalated_at IS NULL AND assignee_role IS NULL
      AND kind NOT IN ('deal_update', 'kc_update_candidate', 'tool_action')
      AND payload->>'contact_id' = %s RETURNING id, org_id
)
SELECT count(pg_notify(%s, org_id || ':' || id)) FROM moved
"""
FOLLOW_DEAL = """
WITH moved AS (
    UPDATE approval_items SET assignee = %s, routed_at = now()
    WHERE status = 'pending' AND escalated_at IS NULL AND assignee_role IS NULL
      AND (kind IN ('deal_update', 'deployment_kit')
           OR (kind = 'follow_up' AND payload->>'contact_id' IS NULL))
      AND payload->>'deal_id' = %s RETURNING id, org_id
)
SELECT count(pg_notify(%s, org_id || ':' || id)) FROM moved
"""
# Old values on the right of SET: ``escalated_from`` keeps whose the item was.
ESCALATE = """
WITH moved AS (
    UPDATE approval_items a
    SET assignee = %s, escalated_at = now(), escalated_from = a.assignee, routed_at = now()
    WHERE a.status = 'pending' AND a.escalated_at IS NULL
      AND a.assignee IS DISTINCT FROM %s
      AND a.routed_at < now() - make_interval(hours => %s)
    RETURNING a.id, a.org_id, a.kind, a.escalated_from
)
SELECT id, kind, escalated_from, pg_notify(%s, org_id || ':' || id) AS notified FROM moved
ORDER BY id
"""


def waiting_for(cur: Any, user_id: str) -> int:
    """How many pending items wait in ``user_id``'s own queue: routed to them, or to the
    admins when they are an active admin of the org. What a person's brief and digest count
    first (issue 35 item 4)."""
    return int(fetch_value(cur, WAITING_FOR, (user_id, user_id)))


def standing(cur: Any, user_id: str) -> tuple[int, bool]:
    """``(waiting_for(user_id), is_admin(user_id))`` in one statement."""
    row = fetch_one(cur, STANDING, (user_id, user_id, user_id))
    assert row is not None  # a SELECT of two expressions always has its row
    return int(row["waiting"]), bool(row["admin"])


def is_admin(cur: Any, user_id: str) -> bool:
    """Whether ``user_id`` is an active admin of the org (the admins' queue is theirs)."""
    return bool(fetch_value(cur, IS_ADMIN, (user_id,)))


def hand_over(cur: Any, from_user: str, to_user: str | None) -> int:
    """Every pending item in ``from_user``'s queue moved to ``to_user`` (None: the team's);
    how many."""
    return int(fetch_value(cur, HAND_OVER, (to_user, from_user, CHANNEL)))


def follow_contact(cur: Any, contact_id: str, owner: str | None) -> int:
    """The prospect's pending items moved to its new owner; how many."""
    return int(fetch_value(cur, FOLLOW_CONTACT, (owner, contact_id, CHANNEL)))


def follow_deal(cur: Any, deal_id: str, owner: str | None) -> int:
    """The deal's pending items moved to its new owner; how many."""
    return int(fetch_value(cur, FOLLOW_DEAL, (owner, deal_id, CHANNEL)))


def escalate(cur: Any, backup: str, after_hours: int) -> list[Row]:
    """Pending items routed more than ``after_hours`` ago, never escalated and not the
    backup's already, moved to ``backup``: ``id, kind, escalated_from`` of each."""
    rows = fetch_all(cur, ESCALATE, (backup, backup, after_hours, CHANNEL))
    return [{k: v for k, v in row.items() if k != "notified"} for row in rows]


def in_queue(cur: Any, item_id: str, people: list[Any]) -> list[Any]:
    """Those of ``people`` (rows with ``user_id`` and ``role``) whose queue the item waits in:
    its assignee, or the admins when it is the admins', or all of them when it is the team's
    (or gone: nothing to narrow by)."""
    row = fetch_one(cur, QUEUE_OF, (item_id,))
    if row is None or (row["assignee"] is None and row["assignee_role"] is None):
        return people
    if row["assignee"] is not None:
        return [p for p in people if p["user_id"] == row["assignee"]]
    return [p for p in people if p["role"] in ADMIN_ROLES]
