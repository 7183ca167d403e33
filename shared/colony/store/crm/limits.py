"""HubSpot's per-portal limits as every instance sees them (``crm_rate_usage``, migration
0058): the calls made in each second of the rolling window and on each day, per portal.

``take`` is one transaction under an advisory lock per portal: count the window and the day,
and either record the call or answer how long until a slot frees. Instances therefore share
one count, and never need HubSpot's 429 to find the limit. The window counts whole seconds:
the current one and the ``window`` before it (11 for HubSpot's 10), because a rolling 10 s
that starts mid-second reaches into the 11th; so no rolling window HubSpot looks at ever
holds more than ``burst`` of our calls (the cost: a slot frees up to a second later). The
table names no record, only counts per portal, so it is not org-scoped; called with
``Database.transaction(None)``.
"""

from __future__ import annotations

from typing import Any

from colony.store.rows import fetch_one

LOCK = "SELECT pg_advisory_xact_lock(hashtext('colony-crm-rate:' || %s || ':' || %s))"
PRUNE = """
DELETE FROM crm_rate_usage
WHERE provider = %s AND account_id = %s
  AND ((NOT daily AND bucket < %s) OR (daily AND bucket < %s))
"""
USED = """
SELECT coalesce(sum(calls) FILTER (WHERE NOT daily AND bucket >= %s), 0) AS window,
       min(bucket) FILTER (WHERE NOT daily AND bucket >= %s) AS oldest,
       coalesce(sum(calls) FILTER (WHERE daily AND bucket = %s), 0) AS today
FROM crm_rate_usage WHERE provider = %s AND account_id = %s
"""
COUNT = """
INSERT INTO crm_rate_usage (provider, account_id, bucket, daily, calls)
VALUES (%s, %s, %s, false, %s), (%s, %s, %s, true, %s)
ON CONFLICT (provider, account_id, daily, bucket)
DO UPDATE SET calls = crm_rate_usage.calls + EXCLUDED.calls
"""
DAY = 86_400


def take(
    cur: Any,
    provider: str,
    account_id: str,
    now: float,
    *,
    burst: int,
    window: int,
    daily: int,
    calls: int = 1,
) -> float | None:
    """Record ``calls`` for the portal at ``now`` (epoch seconds) if the window and the day
    have room; else the seconds until they do (nothing recorded)."""
    second, day = int(now), int(now) // DAY
    cur.execute(LOCK, (provider, account_id))
    cur.execute(PRUNE, (provider, account_id, second - window, day))
    used = fetch_one(cur, USED, (second - window, second - window, day, provider, account_id))
    assert used is not None
    if int(used["today"]) + calls > daily:
        return float((day + 1) * DAY - now)
    if int(used["window"]) + calls > burst:
        oldest = int(used["oldest"] if used["oldest"] is not None else second)
        return max(0.001, oldest + window + 1 - now)  # when ``oldest`` leaves the count
    cur.execute(COUNT, (provider, account_id, second, calls, provider, account_id, day, calls))
    return None


def spend(cur: Any, provider: str, account_id: str, now: float, *, calls: int = 1) -> None:
    """Record ``calls`` for the portal at ``now`` whatever the count (a request that must be
    made: undoing our own write)."""
    second, day = int(now), int(now) // DAY
    cur.execute(LOCK, (provider, account_id))
    cur.execute(COUNT, (provider, account_id, second, calls, provider, account_id, day, calls))
