"""Drive watch channels (``drive_channels``): which channel watches which of the org's
folders, Drive's resource id (``channels.stop`` needs it) and when the channel expires.

Every function takes a cursor from ``Database.transaction(org_id)``: RLS scopes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

ADD = """
INSERT INTO drive_channels (id, org_id, folder_id, resource_id, expires_at)
VALUES (%s, %s, %s, %s, %s)
"""
GET = "SELECT id, folder_id, resource_id, expires_at, status FROM drive_channels WHERE id = %s"
ACTIVE = """
SELECT id, folder_id, resource_id, expires_at FROM drive_channels
WHERE status = 'active' ORDER BY expires_at, id
"""
EXPIRING = """
SELECT id, folder_id, resource_id, expires_at FROM drive_channels
WHERE status = 'active' AND expires_at <= %s ORDER BY expires_at, id
"""
STOP = """
UPDATE drive_channels SET status = 'stopped', stopped_at = now()
WHERE id = %s AND status = 'active'
RETURNING id
"""
LIST = """
SELECT id, folder_id, expires_at, status, created_at, stopped_at FROM drive_channels
ORDER BY created_at DESC, id LIMIT %s
"""


def add(
    cur: Any, channel_id: str, org_id: str, folder_id: str, resource_id: str, expires: datetime
) -> None:
    cur.execute(ADD, (channel_id, org_id, folder_id, resource_id, expires))


def get(cur: Any, channel_id: str) -> Row | None:
    return fetch_one(cur, GET, (channel_id,))


def active(cur: Any) -> list[Row]:
    return fetch_all(cur, ACTIVE)


def expiring(cur: Any, before: datetime) -> list[Row]:
    """Active channels that expire at or before ``before``."""
    return fetch_all(cur, EXPIRING, (before,))


def mark_stopped(cur: Any, channel_id: str) -> bool:
    return fetch_one(cur, STOP, (channel_id,)) is not None


def recent(cur: Any, limit: int = 50) -> list[Row]:
    return fetch_all(cur, LIST, (limit,))
