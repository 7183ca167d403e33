"""Who owns a prospect (ENT-002) or a deal (ENT-003): an owner is one of the org's people
(``org_members``; the foreign key refuses anyone else, another org's user included).

Setting one owner, assigning many, handing a leaver's on to their successor, and round
robin's place in each pool of people. Every function takes the cursor of a transaction
opened under the org (RLS scopes it); what changed is audited by the caller
(``colony.flows.tenants.owners``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from colony.store.db import Row, fetch_all, fetch_one, fetch_value
from colony.store.tenants.members import ADMIN_ROLES

Subject = Literal["contact", "deal"]
TABLES: dict[str, str] = {"contact": "contacts", "deal": "deals"}  # the whitelist

# The previous owner comes back with the row (a locked read, then the update).
SET_OWNER = """
WITH old AS (SELECT id, owner_id FROM {table} WHERE id = %s FOR UPDATE)
UPDATE {table} t SET owner_id = %s, updated_at = now() FROM old WHERE t.id = old.id
RETURNING old.owner_id AS previous
"""
HAND_OVER = "UPDATE {table} SET owner_id = %s, updated_at = now() WHERE owner_id = %s"
OWNED = "SELECT count(*) FROM {table} WHERE owner_id = %s"
# A leaver's successor: the org's named backup if active, else its longest-standing active
# admin, else its longest-standing active member; never the leaver.
SUCCESSOR = f"""
SELECT m.user_id FROM org_members m
LEFT JOIN org_team t ON t.org_id = m.org_id AND t.backup_user_id = m.user_id
WHERE m.status = 'active' AND m.user_id <> %s
ORDER BY (t.org_id IS NULL), (m.role NOT IN {ADMIN_ROLES!r}), m.joined_at, m.user_id
LIMIT 1
"""
UNOWNED_CONTACTS = """
SELECT id, company, company_domain, title, enrichment, created_at FROM contacts
WHERE owner_id IS NULL AND id > %s ORDER BY id LIMIT %s
"""
# A deal without an owner takes its prospect's (when that one has an active owner).
DEALS_FROM_CONTACTS = """
UPDATE deals d SET owner_id = c.owner_id, updated_at = now()
FROM contacts c JOIN org_members m
    ON m.org_id = c.org_id AND m.user_id = c.owner_id AND m.status = 'active'
WHERE d.owner_id IS NULL AND d.contact_id = c.id
RETURNING d.id, d.owner_id
"""
UNOWNED_DEALS = "SELECT id FROM deals WHERE owner_id IS NULL AND id > %s ORDER BY id LIMIT %s"
SET_MANY = """
UPDATE {table} t SET owner_id = v.owner, updated_at = now()
FROM unnest(%s::text[], %s::text[]) AS v(id, owner)
WHERE t.id = v.id AND t.owner_id IS NULL
"""
CURSOR = "SELECT last_user_id FROM assignment_cursors WHERE pool = %s FOR UPDATE"
MOVE_CURSOR = """
INSERT INTO assignment_cursors (org_id, pool, last_user_id) VALUES (%s, %s, %s)
ON CONFLICT (org_id, pool) DO UPDATE SET last_user_id = EXCLUDED.last_user_id
"""
OWNER_OF = "SELECT owner_id FROM {table} WHERE id = %s"


def _table(subject: str) -> str:
    try:
        return TABLES[subject]
    except KeyError:
        raise ValueError(f"unknown subject {subject!r}") from None


def set_owner(cur: Any, subject: Subject, subject_id: str, owner: str | None) -> Row | None:
    """Give one prospect or deal to ``owner``: ``{"previous"}``, or None when the org has no
    such record."""
    return fetch_one(cur, SET_OWNER.format(table=_table(subject)), (subject_id, owner))


def owner_of(cur: Any, subject: Subject, subject_id: str) -> Row | None:
    """``{"owner_id"}`` of one record; None when the org has no such record."""
    return fetch_one(cur, OWNER_OF.format(table=_table(subject)), (subject_id,))


def hand_over(cur: Any, subject: Subject, from_user: str, to_user: str | None) -> int:
    """Everything of ``subject`` ``from_user`` owns given to ``to_user``; how many."""
    cur.execute(HAND_OVER.format(table=_table(subject)), (to_user, from_user))
    return int(cur.rowcount)


def owned(cur: Any, subject: Subject, user_id: str) -> int:
    return int(fetch_value(cur, OWNED.format(table=_table(subject)), (user_id,)))


def successor(cur: Any, leaver: str) -> str | None:
    """Who takes a leaver's prospects, deals and items (None: the org has nobody left)."""
    row = fetch_one(cur, SUCCESSOR, (leaver,))
    return None if row is None else str(row["user_id"])


def unowned_contacts(cur: Any, after: str, limit: int) -> list[Row]:
    """A page of prospects with no owner (id order, after ``after``), with the fields the
    assignment rules read."""
    return fetch_all(cur, UNOWNED_CONTACTS, (after, limit))


def unowned_deals(cur: Any, after: str, limit: int) -> list[str]:
    return [str(r["id"]) for r in fetch_all(cur, UNOWNED_DEALS, (after, limit))]


def deals_follow_contacts(cur: Any) -> list[Row]:
    """Unowned deals given their prospect's owner: ``id, owner_id`` of each."""
    return fetch_all(cur, DEALS_FROM_CONTACTS)


def set_many(cur: Any, subject: Subject, owners: Sequence[tuple[str, str]]) -> int:
    """``(id, owner)`` pairs applied to records that still have no owner; how many."""
    if not owners:
        return 0
    ids, people = [i for i, _ in owners], [o for _, o in owners]
    cur.execute(SET_MANY.format(table=_table(subject)), (ids, people))
    return int(cur.rowcount)


def last_in_pool(cur: Any, pool: str) -> str | None:
    """Round robin's last pick in ``pool``, locked until the transaction ends."""
    row = fetch_one(cur, CURSOR, (pool,))
    return None if row is None else str(row["last_user_id"])


def move_cursor(cur: Any, org_id: str, pool: str, user_id: str) -> None:
    cur.execute(MOVE_CURSOR, (org_id, pool, user_id))
