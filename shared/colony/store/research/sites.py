"""The pace kept towards each site, across instances (``research_sites``, migration 0041),
and each origin's robots.txt as last read (``research_robots``).

A request to a site is made only by the holder of its slot: ``claim`` takes it in one
statement, an upsert whose conflict branch updates the row only when no lease is live and
``next_allowed_at`` has passed. Two claims of one site take turns on the row lock, and the
second re-reads the row the first left, so exactly one of them gets it, however many
instances ask. ``release`` ends the lease and sets the next allowed time to now plus the
gap; ``renew`` moves a live lease on before each further request its holder makes. Times are
the database's clock (``clock_timestamp()``), the one clock every instance shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from colony.errors import InternalError
from colony.store.db import Row, fetch_one

# The LEFT JOIN reads the row as it was before this statement (its snapshot): for a claim
# that failed, that is when the site frees up, near enough for a retry's schedule.
CLAIM = """
WITH claimed AS (
    INSERT INTO research_sites AS s (site, lease_id, lease_until)
    VALUES (%s, %s, clock_timestamp() + make_interval(secs => %s))
    ON CONFLICT (site) DO UPDATE
        SET lease_id = EXCLUDED.lease_id, lease_until = EXCLUDED.lease_until
        WHERE s.next_allowed_at <= clock_timestamp()
          AND (s.lease_until IS NULL OR s.lease_until <= clock_timestamp())
    RETURNING s.site
)
SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, clock_timestamp() AS now,
       greatest(r.next_allowed_at, clock_timestamp()) AS free_at, r.lease_until
FROM (SELECT 1) AS one LEFT JOIN research_sites r ON r.site = %s
"""
RENEW = """
UPDATE research_sites SET lease_until = clock_timestamp() + make_interval(secs => %s)
WHERE site = %s AND lease_id = %s AND lease_until > clock_timestamp()
"""
RELEASE = """
UPDATE research_sites
SET lease_id = NULL, lease_until = NULL,
    next_allowed_at = clock_timestamp() + make_interval(secs => %s)
WHERE site = %s AND lease_id = %s
"""
ROBOTS = """
SELECT verdict, body, status, fetched_at FROM research_robots
WHERE origin = %s AND fetched_at > clock_timestamp() - make_interval(secs => %s)
"""
SAVE_ROBOTS = """
INSERT INTO research_robots (origin, verdict, body, status, fetched_at)
VALUES (%s, %s, %s, %s, clock_timestamp())
ON CONFLICT (origin) DO UPDATE SET verdict = EXCLUDED.verdict, body = EXCLUDED.body,
    status = EXCLUDED.status, fetched_at = EXCLUDED.fetched_at
"""


@dataclass(frozen=True, slots=True)
class Slot:
    """A claim's answer: ``claimed``, or not before ``retry_at`` (the database's time)."""

    claimed: bool
    now: datetime
    retry_at: datetime | None = None


def claim(cur: Any, site: str, lease_id: str, lease_seconds: float, busy_retry: float) -> Slot:
    """Take ``site``'s slot for ``lease_seconds`` under ``lease_id``. Not free: when to ask
    again, the site's next allowed time, or ``busy_retry`` seconds on if a lease is live
    (its holder usually releases it long before it lapses)."""
    row = fetch_one(cur, CLAIM, (site, lease_id, lease_seconds, site))
    if row is None:  # the statement answers one row, whatever the table holds
        raise InternalError(f"claiming research site {site!r} answered no row")
    now: datetime = row["now"]
    if row["claimed"]:
        return Slot(True, now)
    retry: datetime = row["free_at"] or now
    lease = row["lease_until"]
    if lease is not None and lease > now:
        retry = max(retry, now + timedelta(seconds=busy_retry))
    return Slot(False, now, retry)


def renew(cur: Any, site: str, lease_id: str, lease_seconds: float) -> bool:
    """Extend a lease still held; False if it lapsed (another may hold the site now)."""
    cur.execute(RENEW, (lease_seconds, site, lease_id))
    return bool(cur.rowcount == 1)


def release(cur: Any, site: str, lease_id: str, gap_seconds: float) -> None:
    """End the lease: the site's next request is ``gap_seconds`` from now. A lease that
    lapsed and was claimed again is the new holder's, untouched."""
    cur.execute(RELEASE, (gap_seconds, site, lease_id))


def robots(cur: Any, origin: str, fresh_seconds: float) -> Row | None:
    """``origin``'s robots.txt row if it was fetched within ``fresh_seconds``."""
    return fetch_one(cur, ROBOTS, (origin, fresh_seconds))


def save_robots(cur: Any, origin: str, verdict: str, body: str, status: int | None) -> None:
    """Keep what ``origin``'s robots.txt said, fetched now."""
    cur.execute(SAVE_ROBOTS, (origin, verdict, body, status))
