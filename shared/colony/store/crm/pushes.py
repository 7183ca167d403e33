"""What is written to an org's CRM and what became of it (``crm_pushes``, migration 0055):
one row per approved deal update, sent message, reply and call summary, unique per source so
a re-applied approval or a redelivered event makes one row (``colony.flows.crm.outbound``).

Every function takes a cursor from ``Database.transaction(org_id)``: RLS scopes it to the org,
so another org's push is not found at all."""

from __future__ import annotations

from typing import Any, Literal

from colony.store.rows import Row, fetch_all, fetch_one

Kind = Literal["deal_update", "email", "reply", "call"]
Status = Literal[
    "queued", "waiting", "written", "conflict", "unlinked", "not_connected", "unmapped", "refused"
]
FINAL: frozenset[str] = frozenset(
    {"written", "conflict", "unlinked", "not_connected", "unmapped", "refused"}
)

ADD = """
INSERT INTO crm_pushes (org_id, provider, kind, source_id)
VALUES (%s, %s, %s, %s)
ON CONFLICT (org_id, provider, kind, source_id) DO NOTHING
RETURNING id
"""
_COLUMNS = """id, provider, kind, source_id, status, outcome, remote_id, conflict_item_id,
    attempts, created_at, updated_at"""
BY_SOURCE = f"""
SELECT {_COLUMNS} FROM crm_pushes WHERE provider = %s AND kind = %s AND source_id = %s
"""
# The task's claim: the row locked for the attempt, so two deliveries of one task take turns
# and the second finds it written.
CLAIM = f"""
UPDATE crm_pushes SET attempts = attempts + 1, updated_at = now()
WHERE id = %s RETURNING {_COLUMNS}
"""
SETTLE = """
UPDATE crm_pushes SET status = %s, outcome = %s, remote_id = COALESCE(%s, remote_id),
    conflict_item_id = COALESCE(%s, conflict_item_id), updated_at = now()
WHERE id = %s
"""
REQUEUE_WAITING = """
UPDATE crm_pushes SET status = 'queued', outcome = NULL, updated_at = now()
WHERE provider = %s AND status = 'waiting' RETURNING id
"""
BY_ID = f"SELECT {_COLUMNS} FROM crm_pushes WHERE id = %s"
OF_ORG = f"SELECT {_COLUMNS} FROM crm_pushes ORDER BY created_at, id"


def add(cur: Any, org_id: str, provider: str, kind: Kind, source_id: str) -> str | None:
    """A new push of ``source_id``; None when it already has one (a re-applied approval)."""
    row = fetch_one(cur, ADD, (org_id, provider, kind, source_id))
    return str(row["id"]) if row else None


def by_source(cur: Any, provider: str, kind: Kind, source_id: str) -> Row | None:
    return fetch_one(cur, BY_SOURCE, (provider, kind, source_id))


def by_id(cur: Any, push_id: str) -> Row | None:
    return fetch_one(cur, BY_ID, (push_id,))


def claim(cur: Any, push_id: str) -> Row | None:
    """The push, locked for this attempt and counted (None: not in this org)."""
    return fetch_one(cur, CLAIM, (push_id,))


def settle(
    cur: Any,
    push_id: str,
    status: Status,
    outcome: str | None = None,
    *,
    remote_id: str | None = None,
    conflict_item_id: str | None = None,
) -> None:
    """Record what became of the push (``outcome`` in our words, never a prospect's)."""
    note = outcome[:500] if outcome else None
    cur.execute(SETTLE, (status, note, remote_id, conflict_item_id, push_id))


def requeue_waiting(cur: Any, provider: str) -> list[str]:
    """The org's pushes that waited for a reconnect, queued again; their ids."""
    return [str(r["id"]) for r in fetch_all(cur, REQUEUE_WAITING, (provider,))]


def of_org(cur: Any) -> list[Row]:
    """Every push of the org, oldest first (what an admin or a test reads)."""
    return fetch_all(cur, OF_ORG)
