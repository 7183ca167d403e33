"""What was written to the CRM under an idempotency key (``crm_writes``, migration 0046):
``DbLedger`` is the ``colony.ports.WriteLedger`` of one org and provider, each call a
transaction of its own (it is called between CRM requests, never inside another's
transaction). The first id kept under a key wins."""

from __future__ import annotations

from typing import Any

from colony.store.db import Database
from colony.store.rows import fetch_one

RECORDED = "SELECT remote_id FROM crm_writes WHERE provider = %s AND idempotency_key = %s"
RECORD = """
INSERT INTO crm_writes (org_id, provider, idempotency_key, kind, remote_id)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (org_id, provider, idempotency_key) DO NOTHING
"""


def recorded(cur: Any, provider: str, key: str) -> str | None:
    row = fetch_one(cur, RECORDED, (provider, key))
    return str(row["remote_id"]) if row else None


def record(cur: Any, org_id: str, provider: str, key: str, kind: str, remote_id: str) -> str:
    """Keep ``remote_id`` under ``key`` unless one is kept; the id kept."""
    cur.execute(RECORD, (org_id, provider, key, kind, remote_id))
    kept = recorded(cur, provider, key)
    assert kept is not None  # inserted, or there before
    return kept


class DbLedger:
    """``WriteLedger`` over ``crm_writes`` for one org and provider."""

    def __init__(self, db: Database, org_id: str, provider: str = "hubspot") -> None:
        self._db, self._org, self._provider = db, org_id, provider

    def recorded(self, key: str) -> str | None:
        with self._db.transaction(self._org) as cur:
            return recorded(cur, self._provider, key)

    def record(self, key: str, kind: str, remote_id: str) -> str:
        with self._db.transaction(self._org) as cur:
            return record(cur, self._org, self._provider, key, kind, remote_id)
