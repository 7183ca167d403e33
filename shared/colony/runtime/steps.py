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

import math
import uuid
from collections.abc import Callable
from typing import Any

import pg8000.dbapi

from colony.deadline import WRAP_UP_SECONDS, time_left
from colony.errors import UpstreamError
from colony.store import steps as run_steps
from colony.store.db import Database

# Longer than any function may run (the longest timeout is 540 s): a lease never lapses while
# its holder may still be working, so a duplicate delivery waits rather than repeats the
# model call (tests/test_call_limits.py holds the registry to it). Within a function's
# invocation the lease is what is left of the invocation instead (``invocation_lease``), so a
# holder killed mid-step (or whose release the database did not take: a restart) frees the
# step minutes sooner; the chaos soak found contacts waiting the full ten minutes.
LEASE_SECONDS = 600
INVOCATION_SLACK = 30  # past the invocation's end: the platform has ended it by then
LEASE_MARGIN = 5.0  # a busy step's retry comes this long after the lease lapses, to find it so

Apply = Callable[[pg8000.dbapi.Cursor, Any], None]


class StepBusy(UpstreamError):
    """Another delivery is running this step; retry later (its output will be stored).

    ``retry_after``: seconds until the holder's lease lapses (None: not known). A holder that
    died (a killed instance) keeps the step for that long, longer than Pub/Sub's delivery
    attempts last: the last attempt puts the event back for then instead of dead-lettering
    it (``colony.runtime.redelivery``)."""

    code = "step_busy"
    expected = True  # duplicate deliveries are normal with Pub/Sub: not an error

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def invocation_lease() -> int:
    """A step's lease: until just after the current invocation must have ended (its model
    window, the wrap-up after it, and ``INVOCATION_SLACK``), or ``LEASE_SECONDS`` outside a
    function (tools, tests, the local scenario: no window)."""
    left = time_left()
    if left is None:
        return LEASE_SECONDS
    return min(LEASE_SECONDS, math.ceil(max(left, 0.0)) + WRAP_UP_SECONDS + INVOCATION_SLACK)


def stored(db: Database, org_id: str, run_id: str, key: str) -> Any | None:
    with db.transaction(org_id) as cur:
        row = run_steps.get(cur, run_id, key)
    return row["output"] if row and row["status"] == "done" else None


def step(
    db: Database,
    org_id: str,
    run_id: str,
    key: str,
    compute: Callable[[], Any],
    apply: Apply | None = None,
    *,
    lease_seconds: int | None = None,
) -> Any:
    """Run step ``key`` of ``run_id`` to completion at most once; return its output.

    Three round trips on replay (begin and scope, claim-or-read, commit), six on a first run
    without effects (those three, then begin, finish, commit): see ``colony.store.steps``.
    """
    claim = uuid.uuid4().hex
    if lease_seconds is None:
        lease_seconds = invocation_lease()
    with db.transaction(org_id) as cur:
        state, output = run_steps.claim_or_stored(cur, org_id, run_id, key, claim, lease_seconds)
        # None: finished or released since the claim was refused; the retry finds out at once
        left = (run_steps.lease_left(cur, run_id, key) or 0.0) if state == "busy" else 0.0
    left += LEASE_MARGIN
    if state == "done":
        return output
    if state == "busy":
        raise StepBusy(f"step {key!r} of run {run_id!r} is running elsewhere", retry_after=left)
    try:
        output = compute()
    except BaseException:
        with db.transaction(org_id) as cur:  # let the redelivery start it afresh
            run_steps.release(cur, run_id, key, claim)
        raise
    try:
        with db.transaction(org_id) as cur:
            if run_steps.finish(cur, run_id, key, claim, output):
                if apply is not None:
                    apply(cur, output)
                return output
            row = run_steps.get(cur, run_id, key)
    except BaseException:
        # The effects did not commit, so neither did the output: free the step at once
        # rather than leaving a live lease that blocks every redelivery.
        with db.transaction(org_id) as cur:
            run_steps.release(cur, run_id, key, claim)
        raise
    if row and row["status"] == "done":  # our lease lapsed and another claimant finished
        return row["output"]
    raise StepBusy(f"step {key!r} of run {run_id!r} was taken over before it finished")
