"""Which CRM record is which of ours (``crm_links``, migration 0049): the sync keeps a link
per record it has seen, write-back and engagement logging find the CRM's id from ours.

Every function takes a cursor from ``Database.transaction(org_id)``: RLS scopes it to the org,
so another org's links are not found at all."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from colony.store.rows import fetch_one

LINK = """
INSERT INTO crm_links (org_id, provider, object_type, remote_id, entity_id, remote_updated_at)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, provider, object_type, remote_id) DO UPDATE
SET entity_id = coalesce(EXCLUDED.entity_id, crm_links.entity_id),
    remote_updated_at = greatest(EXCLUDED.remote_updated_at, crm_links.remote_updated_at),
    synced_at = now()
"""
COLUMNS = "remote_id, entity_id, remote_updated_at, archived_at, merged_into"
BY_ENTITY = f"""
SELECT {COLUMNS} FROM crm_links
WHERE provider = %s AND object_type = %s AND entity_id = %s
"""
BY_REMOTE = f"""
SELECT {COLUMNS} FROM crm_links
WHERE provider = %s AND object_type = %s AND remote_id = %s
"""


@dataclass(frozen=True, slots=True)
class Link:
    remote_id: str
    entity_id: str | None
    remote_updated_at: datetime | None
    archived_at: datetime | None
    merged_into: str | None

    @property
    def live(self) -> bool:
        return self.archived_at is None and self.merged_into is None


def _link(row: dict[str, Any] | None) -> Link | None:
    return Link(**row) if row else None


def link(
    cur: Any,
    org_id: str,
    provider: str,
    object_type: str,
    remote_id: str,
    entity_id: str | None,
    remote_updated_at: datetime | None = None,
) -> None:
    """Keep (or refresh) the link of one CRM record; a later ``remote_updated_at`` wins."""
    cur.execute(LINK, (org_id, provider, object_type, remote_id, entity_id, remote_updated_at))


def for_entity(cur: Any, provider: str, object_type: str, entity_id: str) -> Link | None:
    """The CRM record linked to one of our rows, or None (not linked, or another org's)."""
    return _link(fetch_one(cur, BY_ENTITY, (provider, object_type, entity_id)))


def for_remote(cur: Any, provider: str, object_type: str, remote_id: str) -> Link | None:
    """Our link of one CRM record, or None when the sync has not seen it."""
    return _link(fetch_one(cur, BY_REMOTE, (provider, object_type, remote_id)))
