"""How messages were refused and how their senders fare (issue 39 item 4; migration 0057).

A refusal is kept on its outbox row as codes (``bounce_smtp``, ``bounce_status``), its class
and name (``colony.policy.bounces``), never the server's text. A message refused for now
counts its ``soft_bounces``; what an address has been refused for now, across its messages,
decides when it is suppressed. Rates are read per sending mailbox (the From address the
message left from, ``sender_address``) and per sending domain over a window, from every
instance's rows alike: the breaker's input.
"""

from __future__ import annotations

from typing import Any, Literal

from colony.store.db import Row, fetch_one

Scope = Literal["mailbox", "domain"]

SET_SENDER = "UPDATE outbox SET sender_address = lower(%s) WHERE id = %s"
# A refusal's codes on the message; a transient one also counts (and dates its first).
RECORD = """
UPDATE outbox SET bounce_smtp = %s, bounce_status = %s, bounce_class = %s, bounce_label = %s,
    soft_bounces = soft_bounces + CASE WHEN %s = 'transient' THEN 1 ELSE 0 END,
    first_soft_bounce_at = CASE WHEN %s = 'transient'
                                THEN COALESCE(first_soft_bounce_at, now())
                                ELSE first_soft_bounce_at END
WHERE id = %s
RETURNING soft_bounces, to_address
"""
# What an address was refused for now across its messages in the last month: how many
# times, and for how long (seconds since the first).
SOFT_STANDING = """
SELECT COALESCE(sum(soft_bounces), 0) AS bounces,
       COALESCE(extract(epoch FROM now() - min(first_soft_bounce_at)), 0) AS lasting_s
FROM outbox
WHERE to_address = lower(%s) AND first_soft_bounce_at >= now() - interval '30 days'
"""
# Messages that left from one mailbox (its address) or domain in the window, and of those
# bounced or complained about, counting only what changed since the sender was last resumed
# by a person. Messages refused at send time count too: they left as far as the
# sender's reputation goes.
_RATES = """
SELECT count(*) AS judged,
       count(*) FILTER (WHERE o.status = 'bounced') AS bounced,
       count(*) FILTER (WHERE o.status = 'complained') AS complained
FROM outbox o
WHERE o.status IN ('sent', 'delivered', 'bounced', 'complained', 'replied')
  AND {match}
  AND o.updated_at >= now() - make_interval(days => %s)
  AND o.updated_at >= COALESCE((SELECT p.resumed_at FROM sender_pauses p
                                WHERE p.scope = %s AND p.sender = %s), '-infinity')
"""
RATES: dict[Scope, str] = {
    "mailbox": _RATES.format(match="o.sender_address = %s"),
    "domain": _RATES.format(match="split_part(o.sender_address, '@', 2) = %s"),
}


def set_sender(cur: Any, outbox_id: str, address: str) -> None:
    """The From address the message goes from (its mailbox; its domain follows)."""
    cur.execute(SET_SENDER, (address, outbox_id))


def record(
    cur: Any,
    outbox_id: str,
    *,
    smtp: int | None,
    status: str | None,
    klass: str,
    label: str,
) -> Row | None:
    """Keep a refusal's codes on its message; ``soft_bounces`` (counted when transient) and
    ``to_address`` after it (None: no such message in this org)."""
    params = (smtp, status, klass, label[:40], klass, klass, outbox_id)
    return fetch_one(cur, RECORD, params)


def soft_standing(cur: Any, address: str) -> tuple[int, float]:
    """How many times ``address`` was refused for now lately, and for how many seconds."""
    row = fetch_one(cur, SOFT_STANDING, (address,))
    assert row is not None  # an aggregate always returns its row
    return int(row["bounces"]), float(row["lasting_s"])


def rates(cur: Any, scope: Scope, sender: str, days: int) -> Row:
    """``judged``, ``bounced`` and ``complained`` for one mailbox or domain over ``days``."""
    row = fetch_one(cur, RATES[scope], (sender.lower(), days, scope, sender.lower()))
    assert row is not None
    return row
