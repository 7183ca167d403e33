"""An org's CRM connection (``crm_connections``) and its OAuth flows in progress
(``crm_oauth_states``), migration 0046.

A state is kept as its SHA-256 only, with the person who began the flow and its expiry; the
callback spends it with one DELETE (so it works once), and RLS shows each org only its own
states, so another org's state is not found at all. Expired states of the org are pruned
whenever a new one is added. "Now" is the flow's clock, passed in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from colony.store.rows import Row, fetch_all, fetch_one

PRUNE_STATES = "DELETE FROM crm_oauth_states WHERE expires_at < %s"
ADD_STATE = """
INSERT INTO crm_oauth_states (org_id, state_hash, provider, user_id, expires_at)
VALUES (%s, %s, %s, %s, %s)
"""
SPEND_STATE = """
DELETE FROM crm_oauth_states WHERE state_hash = %s AND provider = %s
RETURNING user_id, expires_at, expires_at <= %s AS expired
"""
CONNECT = """
INSERT INTO crm_connections (org_id, provider, account_id, status, secret_name, scopes,
    access_expires_at, connected_by)
VALUES (%s, %s, %s, 'connected', %s, %s::jsonb, %s, %s)
ON CONFLICT (org_id, provider) DO UPDATE SET account_id = EXCLUDED.account_id,
    status = 'connected', secret_name = EXCLUDED.secret_name, scopes = EXCLUDED.scopes,
    access_expires_at = EXCLUDED.access_expires_at, paused_reason = NULL,
    connected_by = EXCLUDED.connected_by, connected_at = now(), updated_at = now()
"""
_COLUMNS = """org_id, provider, account_id, status, secret_name, scopes, access_expires_at,
    paused_reason, connected_by, connected_at, updated_at, synced_through"""
GET = f"SELECT {_COLUMNS} FROM crm_connections WHERE provider = %s"
# The refresh takes the row's lock: two instances that find the token near its expiry take
# turns, and the second finds it fresh.
GET_FOR_REFRESH = GET + " FOR UPDATE"
REFRESHED = """
UPDATE crm_connections SET access_expires_at = %s, updated_at = now()
WHERE provider = %s AND status = 'connected'
"""
PAUSE = """
UPDATE crm_connections SET status = 'paused', paused_reason = %s, updated_at = now()
WHERE provider = %s AND status = 'connected'
RETURNING account_id
"""
DISCONNECT = """
UPDATE crm_connections SET status = 'disconnected', access_expires_at = NULL,
    paused_reason = NULL, updated_at = now()
WHERE provider = %s AND status <> 'disconnected'
RETURNING account_id, secret_name
"""
# The reconciliation's watermark moves forward only (a slow run never moves it back).
SYNCED = """
UPDATE crm_connections SET synced_through = greatest(synced_through, %s), updated_at = now()
WHERE provider = %s
"""
SECRET_NAMES = "SELECT secret_name FROM crm_connections ORDER BY provider"


def add_state(
    cur: Any,
    org_id: str,
    state_hash: str,
    provider: str,
    user_id: str,
    expires_at: datetime,
    now: datetime,
) -> None:
    cur.execute(PRUNE_STATES, (now,))
    cur.execute(ADD_STATE, (org_id, state_hash, provider, user_id, expires_at))


def spend_state(cur: Any, state_hash: str, provider: str, now: datetime) -> Row | None:
    """The flow a state began (its ``user_id``, whether it ``expired`` by ``now``), deleted;
    None if the org has no such state (never issued, spent, or another org's)."""
    return fetch_one(cur, SPEND_STATE, (state_hash, provider, now))


def connect(
    cur: Any,
    org_id: str,
    provider: str,
    account_id: str,
    secret_name: str,
    scopes: Sequence[str],
    access_expires_at: datetime,
    actor: str,
) -> None:
    params = (org_id, provider, account_id, secret_name, json.dumps(list(scopes)))
    cur.execute(CONNECT, (*params, access_expires_at, actor))


def get(cur: Any, provider: str, *, for_refresh: bool = False) -> Row | None:
    return fetch_one(cur, GET_FOR_REFRESH if for_refresh else GET, (provider,))


def refreshed(cur: Any, provider: str, access_expires_at: datetime) -> None:
    cur.execute(REFRESHED, (access_expires_at, provider))


def pause(cur: Any, provider: str, reason: str) -> bool:
    """Pause a connected connection; False if it was not connected."""
    return fetch_one(cur, PAUSE, (reason, provider)) is not None


def disconnect(cur: Any, provider: str) -> Row | None:
    """Mark it disconnected; its account and secret name (None: nothing to disconnect)."""
    return fetch_one(cur, DISCONNECT, (provider,))


def synced(cur: Any, provider: str, through: datetime) -> None:
    """Every change of the CRM up to ``through`` (the CRM's own clock) is applied."""
    cur.execute(SYNCED, (through, provider))


def secret_names(cur: Any) -> list[str]:
    """The Secret Manager names of every CRM connection of the org (erasure deletes them)."""
    return [str(r["secret_name"]) for r in fetch_all(cur, SECRET_NAMES)]
