"""Run steps: each durable step's claim, lease and memoised output (``run_steps``).

The protocol these statements implement is ``colony.runtime.steps``'s; every function takes
the cursor of a transaction opened under the run's org (``Database.transaction(org_id)``),
so RLS scopes each statement. They run on every step, so each is prepared once per
connection (``colony.store.wire.prepared``): one round trip each, and no re-planning. A row
is ``running`` (claimed: ``claim`` names the holder, ``lease_until`` when others may take it
over) or ``done`` (``output`` stored, for good).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from colony.store.db import Row, fetch_one
from colony.store.wire import prepared

Claim = Literal["done", "claimed", "busy"]

GET = "SELECT status, output FROM run_steps WHERE run_id = %s AND step_key = %s"
# One statement, one round trip, for what used to be a read and then a claim: a step already
# done returns its output and is neither locked nor written (``done`` is read first and the
# INSERT's SELECT yields no row then); otherwise the step is inserted as running, or taken
# over if its holder's lease has lapsed. A row running under a live lease comes back as no
# row at all: busy. Both parts share one snapshot; the INSERT's conflict check still sees
# rows committed since, so a step finished by another meanwhile reads as busy, as it did
# between the two statements before (the redelivery then finds it done).
CLAIM_OR_STORED = """
WITH done AS (
    SELECT output FROM run_steps WHERE run_id = %s AND step_key = %s AND status = 'done'
), claimed AS (
    INSERT INTO run_steps (org_id, run_id, step_key, status, claim, lease_until)
    SELECT %s, %s, %s, 'running', %s, now() + make_interval(secs => %s)
    WHERE NOT EXISTS (SELECT 1 FROM done)
    ON CONFLICT (org_id, run_id, step_key) DO UPDATE
        SET claim = EXCLUDED.claim, lease_until = EXCLUDED.lease_until
        WHERE run_steps.status = 'running' AND run_steps.lease_until < now()
    RETURNING claim
)
SELECT 'done' AS status, output FROM done
UNION ALL
SELECT 'claimed', NULL FROM claimed
"""
# Only the claim holder finishes: a claimant whose lease lapsed and was taken over matches
# no row, stores nothing and must write no effects.
FINISH = """
UPDATE run_steps SET status = 'done', output = %s::jsonb, claim = NULL, lease_until = NULL
WHERE run_id = %s AND step_key = %s AND status = 'running' AND claim = %s
"""
LEASE_LEFT = """
SELECT greatest(extract(epoch FROM lease_until - now()), 0)::float8 FROM run_steps
WHERE run_id = %s AND step_key = %s AND status = 'running'
"""
RELEASE = """
DELETE FROM run_steps WHERE run_id = %s AND step_key = %s AND status = 'running' AND claim = %s
"""


def get(cur: Any, run_id: str, key: str) -> Row | None:
    """The step's row (``status``, ``output``), None if it was never claimed."""
    return fetch_one(cur, GET, (run_id, key), prepare=True)


def claim_or_stored(
    cur: Any, org_id: str, run_id: str, key: str, claim: str, lease_seconds: int
) -> tuple[Claim, Any]:
    """Claim the step for ``claim`` for ``lease_seconds``, unless it is done or held.

    Returns ``("done", output)`` for a finished step, ``("claimed", None)`` when ``claim``
    now holds it (new, or taken over from a lapsed lease) and ``("busy", None)`` when
    another holder's lease is live.
    """
    params = (run_id, key, org_id, run_id, key, claim, lease_seconds)
    row = fetch_one(cur, CLAIM_OR_STORED, params, prepare=True)
    if row is None:
        return "busy", None
    return ("done", row["output"]) if row["status"] == "done" else ("claimed", None)


def lease_left(cur: Any, run_id: str, key: str) -> float | None:
    """Seconds until the holder's lease of a running step lapses (None: not running)."""
    row = fetch_one(cur, LEASE_LEFT, (run_id, key))
    return None if row is None else float(next(iter(row.values())))


def finish(cur: Any, run_id: str, key: str, claim: str, output: Any) -> bool:
    """Store the output if ``claim`` still holds the step; False if it no longer does."""
    prepared(cur, FINISH, (json.dumps(output), run_id, key, claim))
    return bool(cur.rowcount == 1)


def release(cur: Any, run_id: str, key: str, claim: str) -> None:
    """Forget ``claim``'s unfinished claim, so the next delivery starts the step afresh."""
    prepared(cur, RELEASE, (run_id, key, claim))
