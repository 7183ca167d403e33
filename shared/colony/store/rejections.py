"""Deliveries that can never succeed, on the record: ``rejected_deliveries``.

The edge records a push it acknowledges without acting on (malformed, forged, for another
org) and a flow records a job whose input cannot be stored, so the operator sees what was
dropped and why: ids and a reason, never the payload.
"""

from __future__ import annotations

from colony.store.db import Database

# The application role may INSERT here but not SELECT (so no RETURNING): a rejected payload's
# claimed org is unverified, and no org should read another's failures.
INSERT_REJECTION = (
    "INSERT INTO rejected_deliveries (function, event_id, claimed_org_id, reason) "
    "VALUES (%s, %s, %s, %s)"
)


class DbRejections:
    """``RejectionRecorder`` writing to ``rejected_deliveries`` as the application role."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def record(
        self, function: str, event_id: str | None, claimed_org_id: str | None, reason: str
    ) -> None:
        # lazy: the ports' dataclasses load with the first rejection, not with every deps()
        from colony.ports import Rejection

        kept = Rejection.of(function, event_id, claimed_org_id, reason)
        params = (kept.function, kept.event_id, kept.claimed_org_id, kept.reason)
        with self._db.transaction(None) as cur:
            cur.execute(INSERT_REJECTION, params)
