"""What an org proved is its own outside our database (``resource_claims``, migration 0039).

A resource (a Drive folder; later a sending domain, a CRM account) is bound to at most one
org. The table is keyed by org so it can be distributed like the rest, so the one-org rule
is kept here: ``claim`` takes the resource's advisory lock (claims of one resource take
turns, each seeing what the one before committed), names the resource in the
transaction-local ``app.claim_probe`` so the read-only ``claim_probe`` policy shows the
NOT EXISTS every org's row of that one resource, and clears the setting before returning,
so nothing later in the transaction sees another org's row. ``held`` reads the caller's own
org only (RLS); an erased org's claims go with its rows.

Every function takes a cursor from ``Database.transaction(org_id)``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from colony.store.db import fetch_one


class Claim(Enum):
    """What ``claim`` found: the resource is now (or already was) the org's, or another's."""

    OURS = "ours"
    ELSEWHERE = "elsewhere"


LOCK = """
SELECT pg_advisory_xact_lock(hashtextextended('resource_claim' || chr(10) || %s, 0)),
       set_config('app.claim_probe', %s, true)
"""
CLAIM = """
INSERT INTO resource_claims (org_id, kind, resource_id, method, claimed_by)
SELECT %s, %s, %s, %s, %s
WHERE NOT EXISTS (
    SELECT 1 FROM resource_claims WHERE kind = %s AND resource_id = %s AND org_id <> %s
)
ON CONFLICT (org_id, kind, resource_id) DO NOTHING
RETURNING org_id
"""
UNPROBE = "SELECT set_config('app.claim_probe', '', true)"
HELD = "SELECT 1 FROM resource_claims WHERE kind = %s AND resource_id = %s"
PROBE = "SELECT set_config('app.claim_probe', %s, true)"
ELSEWHERE = """
SELECT 1 FROM resource_claims WHERE kind = %s AND resource_id = %s AND org_id <> %s
"""
RELEASE = "DELETE FROM resource_claims WHERE kind = %s AND resource_id = %s"
OWNER = "SELECT org_id FROM resource_claims WHERE kind = %s AND resource_id = %s"


def _probe(kind: str, resource_id: str) -> str:
    return f"{kind}\n{resource_id}"


def claim(cur: Any, org_id: str, kind: str, resource_id: str, method: str, actor: str) -> Claim:
    """Bind ``resource_id`` to the org, unless another org holds it."""
    probe = _probe(kind, resource_id)
    cur.execute(LOCK, (probe, probe))
    try:
        params = (org_id, kind, resource_id, method, actor, kind, resource_id, org_id)
        if fetch_one(cur, CLAIM, params) is not None:
            return Claim.OURS
    finally:
        cur.execute(UNPROBE)
    # Nothing inserted: the org's own row was there (visible), or another org's (not).
    return Claim.OURS if held(cur, kind, resource_id) else Claim.ELSEWHERE


def claimed_elsewhere(cur: Any, org_id: str, kind: str, resource_id: str) -> bool:
    """Whether another org holds ``resource_id`` (which org, it does not say), read through
    the same probe as ``claim`` and cleared before returning."""
    cur.execute(PROBE, (_probe(kind, resource_id),))
    try:
        return fetch_one(cur, ELSEWHERE, (kind, resource_id, org_id)) is not None
    finally:
        cur.execute(UNPROBE)


def owner(cur: Any, kind: str, resource_id: str) -> str | None:
    """The org that holds ``resource_id`` (None: no org), for routing an event that names
    only the resource (HubSpot's webhooks name the portal). Read through the same probe as
    ``claim``, cleared before returning: the caller learns the one owner and nothing else."""
    cur.execute(PROBE, (_probe(kind, resource_id),))
    try:
        row = fetch_one(cur, OWNER, (kind, resource_id))
    finally:
        cur.execute(UNPROBE)
    return str(row["org_id"]) if row else None


def held(cur: Any, kind: str, resource_id: str) -> bool:
    """Whether the transaction's org holds ``resource_id``."""
    return fetch_one(cur, HELD, (kind, resource_id)) is not None


def release(cur: Any, kind: str, resource_id: str) -> None:
    """The org lets ``resource_id`` go (a disconnected CRM account): another org may claim
    it from now on. RLS limits the delete to the transaction's own org."""
    cur.execute(RELEASE, (kind, resource_id))
