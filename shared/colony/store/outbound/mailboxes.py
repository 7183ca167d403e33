"""An org's sender mailboxes (``sender_mailboxes``, migration 0052), what each sent on a day,
and which mailbox each outbox message goes from.

A mailbox's count for a day is the org's outbox rows assigned to it for that UTC day
(``send_day``), so it holds across instances. Assigning a message takes the mailbox row's
lock first (``lock``), and counts in a statement after the lock is held: under READ
COMMITTED a statement that waited for a lock still reads with the snapshot it started with,
so counting in the locking statement could miss the send that held the lock. Two instances
that send from one mailbox take turns, and the second counts the first's message.

Every function takes a cursor from ``Database.transaction(org_id)``: RLS shows the org's own
mailboxes only.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from colony.store.rows import Row, fetch_all, fetch_one

COLUMNS = """m.id, m.address, m.domain, m.display_name, m.kind, m.daily_limit,
    m.warmup_start, m.warmup_days, m.warmup_first, m.status, m.grant_status, m.grant_secret,
    m.grant_reason, m.grant_expires_at, m.created_by, m.created_at, m.updated_at, m.user_id,
    d.status AS domain_status, p.status AS person_status"""
_FROM = """sender_mailboxes m JOIN sending_domains d ON d.domain = m.domain
    LEFT JOIN org_members p ON p.org_id = m.org_id AND p.user_id = m.user_id"""
ADD = """
INSERT INTO sender_mailboxes (org_id, address, domain, display_name, kind, daily_limit,
    warmup_start, warmup_days, warmup_first, user_id, created_by)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, address) DO NOTHING RETURNING id
"""
GET = f"SELECT {COLUMNS} FROM {_FROM} WHERE m.id = %s"
ALL = f"SELECT {COLUMNS} FROM {_FROM} ORDER BY m.address"
ANY = "SELECT EXISTS (SELECT 1 FROM sender_mailboxes) AS any"
# Ready: takes new contacts (active, its domain verified, its grant connected if it has one).
READY = f"""
SELECT {COLUMNS} FROM {_FROM}
WHERE m.status = 'active' AND d.status = 'verified'
  AND (m.kind = 'provider' OR m.grant_status = 'connected')
ORDER BY m.address
"""
# The mailboxes of a contact's owner (none when it has no owner or they have none).
OF_OWNER = """
SELECT m.id FROM sender_mailboxes m JOIN contacts c ON c.owner_id = m.user_id
WHERE c.id = %s ORDER BY m.id
"""
# A person who left: their active mailboxes stop taking new contacts (and sending).
PAUSE_PERSON = """
UPDATE sender_mailboxes SET status = 'paused', updated_at = now()
WHERE user_id = %s AND status = 'active' RETURNING id
"""
LOCK = "SELECT id FROM sender_mailboxes WHERE id = ANY(%s::text[]) ORDER BY id FOR UPDATE"
# What each mailbox has on ``day`` besides this message (a retry's own row is not counted
# twice: it is already assigned to the day).
USED = """
SELECT mailbox_id, count(*) AS used FROM outbox
WHERE mailbox_id = ANY(%s::text[]) AND send_day = %s AND id <> %s
GROUP BY mailbox_id
"""
ASSIGN = """
UPDATE outbox SET mailbox_id = %s, send_day = %s, wait_reason = NULL,
    message_id = COALESCE(message_id, %s)
WHERE id = %s RETURNING message_id
"""
# The mailbox (and Gmail thread) of a contact's first message in a campaign: its later
# steps go from there, into that thread.
FIRST_OF_CONTACT = """
SELECT mailbox_id, provider_thread FROM outbox
WHERE campaign_id = %s AND contact_id = %s AND mailbox_id IS NOT NULL AND id <> %s
  AND status IN ('sending', 'sent', 'delivered', 'bounced', 'complained', 'replied')
ORDER BY sequence_step, created_at LIMIT 1
"""
FIX_MESSAGE_ID = """
UPDATE outbox SET message_id = COALESCE(message_id, %s), wait_reason = NULL
WHERE id = %s RETURNING message_id
"""
OF_MESSAGE = "SELECT mailbox_id, provider_thread, send_day FROM outbox WHERE id = %s"
# Back to the queue with why it waits (shown on its card). It did not leave, so nothing of
# its send is kept: not counted against any day, and its next attempt chooses its mailbox
# (and so its Message-ID) afresh: a contact's first message may go from another mailbox
# than the one that could not send it.
WAIT = """
UPDATE outbox SET status = 'queued', send_lease_until = NULL, send_day = NULL,
    mailbox_id = NULL, message_id = NULL, wait_reason = %s, updated_at = now()
WHERE id = %s AND status = 'sending'
"""
SET_THREAD = "UPDATE outbox SET provider_thread = %s WHERE id = %s AND provider_thread IS NULL"
WAITING = """
SELECT id FROM outbox WHERE status = 'queued' AND wait_reason IS NOT NULL
ORDER BY created_at LIMIT %s
"""
_EDITABLE = frozenset(
    {
        "display_name",
        "daily_limit",
        "warmup_start",
        "warmup_days",
        "warmup_first",
        "status",
        "user_id",
    }
)
GRANT_CONNECT = """
UPDATE sender_mailboxes SET grant_status = 'connected', grant_secret = %s, grant_reason = NULL,
    grant_expires_at = %s, updated_at = now()
WHERE id = %s AND kind <> 'provider' RETURNING grant_secret
"""
GRANT_REFRESHED = """
UPDATE sender_mailboxes SET grant_expires_at = %s, updated_at = now()
WHERE id = %s AND grant_status = 'connected'
"""
GRANT_REVOKED = """
UPDATE sender_mailboxes SET grant_status = 'revoked', grant_reason = %s, grant_secret = NULL,
    updated_at = now()
WHERE id = %s AND grant_status = 'connected' RETURNING id
"""
GRANT_NONE = """
UPDATE sender_mailboxes SET grant_status = 'none', grant_reason = NULL, grant_secret = NULL,
    grant_expires_at = NULL, updated_at = now()
WHERE id = %s AND grant_status <> 'none' RETURNING id
"""
LOCK_ONE = "SELECT grant_secret, grant_status FROM sender_mailboxes WHERE id = %s FOR UPDATE"
PRUNE_STATES = "DELETE FROM mailbox_oauth_states WHERE expires_at < %s"
ADD_STATE = """
INSERT INTO mailbox_oauth_states (org_id, state_hash, mailbox_id, user_id, expires_at)
VALUES (%s, %s, %s, %s, %s)
"""
SPEND_STATE = """
DELETE FROM mailbox_oauth_states WHERE state_hash = %s
RETURNING mailbox_id, user_id, expires_at <= %s AS expired
"""
SECRET_NAMES = """
SELECT grant_secret FROM sender_mailboxes WHERE grant_secret IS NOT NULL ORDER BY id
"""


def add(cur: Any, org_id: str, fields: dict[str, Any], actor: str) -> str | None:
    """A new mailbox (``fields``: address, domain, display_name, kind, daily_limit,
    warmup_start, warmup_days, warmup_first, user_id); its id, None when the org has the
    address."""
    keys = ("address", "domain", "display_name", "kind", "daily_limit")
    ramp = ("warmup_start", "warmup_days", "warmup_first", "user_id")
    params = (org_id, *(fields[k] for k in keys), *(fields[k] for k in ramp), actor)
    row = fetch_one(cur, ADD, params)
    return None if row is None else str(row["id"])


def get(cur: Any, mailbox_id: str) -> Row | None:
    return fetch_one(cur, GET, (mailbox_id,))


def listing(cur: Any) -> list[Row]:
    return fetch_all(cur, ALL)


def any_mailbox(cur: Any) -> bool:
    """Whether the org has any mailbox (none: its mail goes from its From setting)."""
    row = fetch_one(cur, ANY)
    return bool(row and row["any"])


def update(cur: Any, mailbox_id: str, changes: dict[str, Any]) -> bool:
    """Change the editable ``changes`` (names from a whitelist); False: no such mailbox."""
    names = sorted(changes)
    if not names or not set(names) <= _EDITABLE:
        raise ValueError(f"not editable: {sorted(set(names) - _EDITABLE)}")
    sets = ", ".join(f"{name} = %s" for name in names)  # names from _EDITABLE only
    sql = f"UPDATE sender_mailboxes SET {sets}, updated_at = now() WHERE id = %s RETURNING id"
    return fetch_one(cur, sql, (*(changes[n] for n in names), mailbox_id)) is not None


def ready(cur: Any) -> list[Row]:
    """The mailboxes that take new contacts."""
    return fetch_all(cur, READY)


def of_contact_owner(cur: Any, contact_id: str) -> set[str]:
    """The ids of the mailboxes that belong to ``contact_id``'s owner."""
    return {str(r["id"]) for r in fetch_all(cur, OF_OWNER, (contact_id,))}


def pause_person(cur: Any, user_id: str) -> list[str]:
    """Pause ``user_id``'s active mailboxes (they left); the ids paused."""
    return [str(r["id"]) for r in fetch_all(cur, PAUSE_PERSON, (user_id,))]


def lock(cur: Any, mailbox_ids: list[str]) -> None:
    """Hold these mailboxes' rows until the transaction ends (in id order: no deadlock)."""
    fetch_all(cur, LOCK, (mailbox_ids,))


def used_on(cur: Any, mailbox_ids: list[str], day: date, outbox_id: str) -> dict[str, int]:
    """Messages assigned to each mailbox for ``day``, besides ``outbox_id``."""
    rows = fetch_all(cur, USED, (mailbox_ids, day, outbox_id))
    return {str(r["mailbox_id"]): int(r["used"]) for r in rows}


def assign(cur: Any, outbox_id: str, mailbox_id: str, day: date, message_id: str) -> str:
    """The message goes from ``mailbox_id``, counted on ``day``; its Message-ID (the first
    attempt's, kept by every retry)."""
    row = fetch_one(cur, ASSIGN, (mailbox_id, day, message_id, outbox_id))
    assert row is not None  # the caller holds the row's claim
    return str(row["message_id"])


def fix_message_id(cur: Any, outbox_id: str, message_id: str) -> str:
    """The message's Message-ID: the first attempt's, else ``message_id`` from now on."""
    row = fetch_one(cur, FIX_MESSAGE_ID, (message_id, outbox_id))
    assert row is not None  # the caller holds the row's claim
    return str(row["message_id"])


def first_of_contact(cur: Any, campaign_id: str, contact_id: str, outbox_id: str) -> Row | None:
    """The mailbox and Gmail thread of the contact's first message in the campaign that
    left (or is leaving)."""
    return fetch_one(cur, FIRST_OF_CONTACT, (campaign_id, contact_id, outbox_id))


def of_message(cur: Any, outbox_id: str) -> Row | None:
    """A message's mailbox, Gmail thread and counted day (all None before its first send)."""
    return fetch_one(cur, OF_MESSAGE, (outbox_id,))


def wait(cur: Any, outbox_id: str, reason: str) -> None:
    """Hand a claimed message back to the queue, uncounted, saying why it waits."""
    cur.execute(WAIT, (reason[:300], outbox_id))


def set_thread(cur: Any, outbox_id: str, thread: str) -> None:
    cur.execute(SET_THREAD, (thread[:200], outbox_id))


def waiting(cur: Any, limit: int = 1000) -> list[str]:
    """The org's messages that wait (a mailbox, its grant, its domain, a limit), oldest
    first: a mailbox that can send again hands them all back to the send step, which sends
    what may go and defers the rest again (a message is not bound to a mailbox while it
    waits, so which one it waited for is not kept)."""
    return [str(r["id"]) for r in fetch_all(cur, WAITING, (limit,))]


def lock_one(cur: Any, mailbox_id: str) -> Row | None:
    """The mailbox's grant, its row held (a refresh: two instances take turns)."""
    return fetch_one(cur, LOCK_ONE, (mailbox_id,))


def grant_connected(cur: Any, mailbox_id: str, secret: str, expires: datetime) -> bool:
    return fetch_one(cur, GRANT_CONNECT, (secret, expires, mailbox_id)) is not None


def grant_refreshed(cur: Any, mailbox_id: str, expires: datetime) -> None:
    cur.execute(GRANT_REFRESHED, (expires, mailbox_id))


def grant_revoked(cur: Any, mailbox_id: str, reason: str) -> bool:
    """Mark the grant revoked with ``reason``; False if it was not connected."""
    return fetch_one(cur, GRANT_REVOKED, (reason[:300], mailbox_id)) is not None


def grant_removed(cur: Any, mailbox_id: str) -> bool:
    return fetch_one(cur, GRANT_NONE, (mailbox_id,)) is not None


def add_state(
    cur: Any,
    org_id: str,
    state_hash: str,
    mailbox_id: str,
    user_id: str,
    expires_at: datetime,
    now: datetime,
) -> None:
    cur.execute(PRUNE_STATES, (now,))
    cur.execute(ADD_STATE, (org_id, state_hash, mailbox_id, user_id, expires_at))


def spend_state(cur: Any, state_hash: str, now: datetime) -> Row | None:
    """The flow a state began (mailbox, person, whether it expired), deleted; None if the
    org has no such state."""
    return fetch_one(cur, SPEND_STATE, (state_hash, now))


def secret_names(cur: Any) -> list[str]:
    """The secrets that hold the org's mailbox grants (its erasure deletes them)."""
    return [str(r["grant_secret"]) for r in fetch_all(cur, SECRET_NAMES)]
