"""Durable steps (seed §4.3, in place of Inngest): a run's step outputs memoised in Postgres.

``step(db, org, run_id, key, compute, apply)``:

1. a finished step returns its stored output: no second LLM call, ever;
2. otherwise the step is *claimed* with a lease: a concurrent duplicate delivery finds it
   running and raises ``StepBusy`` (an upstream error, so the platform redelivers later and
   then finds the stored output), rather than repeating the work;
3. ``compute`` runs outside any transaction (LLM calls are slow);
4. the output is stored and ``apply``'s effects written in ONE transaction, and only by the
   claim holder: effects happen exactly once per (run, step).

A claimant that dies leaves a lease that expires; the next delivery takes the step over.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pg8000.dbapi

from colony.errors import UpstreamError
from colony.store.db import Database, fetch_one

LEASE_SECONDS = 300  # longer than any LLM call with its retries

GET = "SELECT status, output FROM run_steps WHERE run_id = %s AND step_key = %s"
CLAIM = """
INSERT INTO run_steps (org_id, run_id, step_key, status, claim, lease_until)
VALUES (%s, %s, %s, 'running', %s, now() + make_interval(secs => %s))
ON CONFLICT (run_id, step_key) DO UPDATE
    SET claim = EXCLUDED.claim, lease_until = EXCLUDED.lease_until
    WHERE run_steps.status = 'running' AND run_steps.lease_until < now()
RETURNING claim
"""
FINISH = """
UPDATE run_steps SET status = 'done', output = %s::jsonb, claim = NULL, lease_until = NULL
WHERE run_id = %s AND step_key = %s AND status = 'running' AND claim = %s
"""
RELEASE = """
DELETE FROM run_steps WHERE run_id = %s AND step_key = %s AND status = 'running' AND claim = %s
"""

Apply = Callable[[pg8000.dbapi.Cursor, Any], None]


class StepBusy(UpstreamError):
    """Another delivery is running this step; retry later (its output will be stored)."""

    code = "step_busy"
    expected = True  # duplicate deliveries are normal with Pub/Sub: not an error


def stored(db: Database, org_id: str, run_id: str, key: str) -> Any | None:
    with db.transaction(org_id) as cur:
        row = fetch_one(cur, GET, (run_id, key))
    return row["output"] if row and row["status"] == "done" else None


def step(
    db: Database,
    org_id: str,
    run_id: str,
    key: str,
    compute: Callable[[], Any],
    apply: Apply | None = None,
    *,
    lease_seconds: int = LEASE_SECONDS,
) -> Any:
    """Run step ``key`` of ``run_id`` to completion at most once; return its output."""
    claim = uuid.uuid4().hex
    with db.transaction(org_id) as cur:
        row = fetch_one(cur, GET, (run_id, key))
        if row and row["status"] == "done":
            return row["output"]
        if fetch_one(cur, CLAIM, (org_id, run_id, key, claim, lease_seconds)) is None:
            raise StepBusy(f"step {key!r} of run {run_id!r} is running elsewhere")
    try:
        output = compute()
    except BaseException:
        with db.transaction(org_id) as cur:  # let the redelivery start it afresh
            cur.execute(RELEASE, (run_id, key, claim))
        raise
    try:
        with db.transaction(org_id) as cur:
            cur.execute(FINISH, (json.dumps(output), run_id, key, claim))
            if cur.rowcount == 1:
                if apply is not None:
                    apply(cur, output)
                return output
            row = fetch_one(cur, GET, (run_id, key))
    except BaseException:
        # The effects did not commit, so neither did the output: free the step at once
        # rather than leaving a live lease that blocks every redelivery.
        with db.transaction(org_id) as cur:
            cur.execute(RELEASE, (run_id, key, claim))
        raise
    if row and row["status"] == "done":  # our lease lapsed and another claimant finished
        return row["output"]
    raise StepBusy(f"step {key!r} of run {run_id!r} was taken over before it finished")
