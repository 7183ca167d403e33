"""The shared state of every rate limit (``rate_limits``, migration 0056): read under a row
lock, decided on in Python (``colony.runtime.limiter``), written back in the same transaction.

``lock`` creates the key's row if it is new (with a full bucket) and returns it locked
``FOR UPDATE``: two instances deciding on one key take turns, and the second reads what the
first wrote, so the limit holds across every instance however many ask. The row is not any
org's (see the migration): call these with a transaction of no org (``db.transaction(None)``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from colony.store.db import Row, fetch_one

# The INSERT's levels start full; ON CONFLICT DO NOTHING leaves an existing row alone, and the
# SELECT below it locks whichever row is there now (a concurrent insert included).
CREATE = """
INSERT INTO rate_limits (key, per_minute, tokens_per_minute, requests, tokens, at)
VALUES (%s, %s, %s, %s, %s, coalesce(%s, extract(epoch FROM clock_timestamp())::float8))
ON CONFLICT (key) DO NOTHING
"""
LOCK = """
SELECT key, per_minute, tokens_per_minute, factor, requests, tokens, at, decreased_at,
       increased_at, throttled, granted, waited, usage_ratio, orgs,
       extract(epoch FROM clock_timestamp())::float8 AS db_now
FROM rate_limits WHERE key = %s FOR UPDATE
"""
SAVE = """
UPDATE rate_limits
SET per_minute = %s, tokens_per_minute = %s, factor = %s, requests = %s, tokens = %s, at = %s,
    decreased_at = %s, increased_at = %s, throttled = %s, granted = %s, waited = %s,
    usage_ratio = %s, orgs = %s::jsonb
WHERE key = %s
"""
READ = """
SELECT key, per_minute, tokens_per_minute, factor, requests, tokens, at, decreased_at,
       increased_at, throttled, granted, waited, usage_ratio, orgs
FROM rate_limits WHERE key = %s
"""


def lock(
    cur: Any,
    key: str,
    *,
    per_minute: float,
    tokens_per_minute: float | None,
    requests: float,
    tokens: float,
    now: float | None,
) -> Row:
    """The key's row, locked until the transaction ends (created full if it is new), with
    ``db_now``: the database's clock, epoch seconds (``now`` None: the row starts then)."""
    row = fetch_one(cur, LOCK, (key,))
    if row is None:  # the first use of this key anywhere (or a racing first use: both fine)
        cur.execute(CREATE, (key, per_minute, tokens_per_minute, requests, tokens, now))
        row = fetch_one(cur, LOCK, (key,))
    assert row is not None  # inserted above, or already there; never deleted
    return row


def save(cur: Any, key: str, state: Mapping[str, Any]) -> None:
    """Write back what ``lock`` read, as the limiter changed it."""
    cur.execute(
        SAVE,
        (
            state["per_minute"],
            state["tokens_per_minute"],
            state["factor"],
            state["requests"],
            state["tokens"],
            state["at"],
            state["decreased_at"],
            state["increased_at"],
            state["throttled"],
            state["granted"],
            state["waited"],
            state["usage_ratio"],
            json.dumps(state["orgs"]),
            key,
        ),
    )


def read(cur: Any, key: str) -> Row | None:
    """The key's row as it is (no lock): for reports and tests."""
    return fetch_one(cur, READ, (key,))
