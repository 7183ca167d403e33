"""CRM records kept as ours (migration 0058): what the sync writes once it has decided what a
HubSpot contact, company or deal becomes (``colony.flows.crm.apply`` decides; this writes).

- ``links``: the links of a batch of CRM ids (one query), what the sync last applied;
- ``put_contacts`` / ``put_deals``: our rows, inserted or overwritten with the CRM's values
  (the CRM is the system of record for the fields it maps), live again if archived;
- ``put_links``: the links of a batch, with what was read (``properties``), the CRM's
  ``updatedAt``, and a held deal's unmapped stage;
- ``archive`` / ``merge``: a record deleted in the CRM, or merged into another.

Batches travel as one JSON parameter (``jsonb_to_recordset``), like the imports' writes.
Every function takes a cursor from ``Database.transaction(org_id)``: RLS scopes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from colony.store.rows import Row, fetch_all, fetch_one

LINKS = """
SELECT remote_id, entity_id, remote_updated_at, archived_at, merged_into, properties,
       unmapped_stage
FROM crm_links
WHERE provider = %s AND object_type = %s AND remote_id = ANY(%s::text[])
"""
CONTACTS_BY_EMAIL = """
SELECT DISTINCT ON (lower(c.email)) lower(c.email) AS email, c.id FROM contacts c
WHERE lower(c.email) = ANY(%s::text[])
  AND NOT EXISTS (SELECT 1 FROM crm_links l WHERE l.entity_id = c.id AND l.object_type = 'contact')
ORDER BY lower(c.email), c.created_at
"""
# A HubSpot deal naming ours (``colony_deal_id``: our id or external id) that no CRM record
# is linked to yet; our id first, then the oldest.
DEALS_BY_KEY = """
SELECT k.key, d.id FROM unnest(%s::text[]) AS k(key)
JOIN LATERAL (
    SELECT d.id FROM deals d
    WHERE (d.id = k.key OR d.external_id = k.key) AND d.archived_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM crm_links l WHERE l.entity_id = d.id AND l.object_type = 'deal')
    ORDER BY d.id = k.key DESC, d.created_at LIMIT 1
) d ON true
"""
PUT_CONTACTS = """
INSERT INTO contacts (org_id, id, external_id, name, title, email, company, company_domain)
SELECT %s, r.id, r.external_id, r.name, r.title, r.email, r.company, r.company_domain
FROM jsonb_to_recordset(%s::jsonb)
     AS r(id text, external_id text, name text, title text, email text, company text,
          company_domain text)
ON CONFLICT (org_id, id) DO UPDATE SET name = EXCLUDED.name, title = EXCLUDED.title,
    email = EXCLUDED.email, company = EXCLUDED.company,
    company_domain = EXCLUDED.company_domain,
    external_id = coalesce(contacts.external_id, EXCLUDED.external_id),
    archived_at = NULL, updated_at = now()
"""
PUT_DEALS = """
INSERT INTO deals (org_id, id, external_id, contact_id, name, stage, value, close_date)
SELECT %s, r.id, r.external_id, r.contact_id, r.name, r.stage, r.value, r.close_date
FROM jsonb_to_recordset(%s::jsonb)
     AS r(id text, external_id text, contact_id text, name text, stage text, value numeric,
          close_date date)
ON CONFLICT (org_id, id) DO UPDATE SET contact_id = EXCLUDED.contact_id, name = EXCLUDED.name,
    stage = EXCLUDED.stage, value = EXCLUDED.value, close_date = EXCLUDED.close_date,
    external_id = coalesce(deals.external_id, EXCLUDED.external_id),
    archived_at = NULL, updated_at = now()
"""
PUT_LINKS = """
INSERT INTO crm_links (org_id, provider, object_type, remote_id, entity_id, remote_updated_at,
                       properties, unmapped_stage)
SELECT %s, %s, %s, r.remote_id, r.entity_id, r.remote_updated_at, r.properties,
       r.unmapped_stage
FROM jsonb_to_recordset(%s::jsonb)
     AS r(remote_id text, entity_id text, remote_updated_at timestamptz, properties jsonb,
          unmapped_stage text)
ON CONFLICT (org_id, provider, object_type, remote_id) DO UPDATE
SET entity_id = coalesce(EXCLUDED.entity_id, crm_links.entity_id),
    remote_updated_at = EXCLUDED.remote_updated_at, properties = EXCLUDED.properties,
    unmapped_stage = EXCLUDED.unmapped_stage, archived_at = NULL, merged_into = NULL,
    synced_at = now()
"""
ARCHIVE_LINK = """
UPDATE crm_links SET archived_at = coalesce(archived_at, %s), synced_at = now()
WHERE provider = %s AND object_type = %s AND remote_id = %s
RETURNING entity_id
"""
ARCHIVE_CONTACT = "UPDATE contacts SET archived_at = coalesce(archived_at, %s) WHERE id = %s"
ARCHIVE_DEAL = "UPDATE deals SET archived_at = coalesce(archived_at, %s) WHERE id = %s"
MERGE_LINK = """
INSERT INTO crm_links (org_id, provider, object_type, remote_id, merged_into)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (org_id, provider, object_type, remote_id) DO UPDATE
SET merged_into = EXCLUDED.merged_into, entity_id = NULL, unmapped_stage = NULL,
    synced_at = now()
RETURNING (SELECT entity_id FROM crm_links o WHERE o.org_id = %s AND o.provider = %s
           AND o.object_type = %s AND o.remote_id = %s) AS entity_id
"""
ADOPT = """
UPDATE crm_links SET entity_id = %s
WHERE provider = %s AND object_type = %s AND remote_id = %s AND entity_id IS NULL
"""
REPOINT_DEALS = "UPDATE deals SET contact_id = %s WHERE contact_id = %s"
LAST_APPLIED = "SELECT max(remote_updated_at) AS at FROM crm_links WHERE provider = %s"
HELD = """
SELECT remote_id, remote_updated_at, properties FROM crm_links
WHERE provider = %s AND object_type = 'deal' AND unmapped_stage = ANY(%s::text[])
ORDER BY remote_id
"""
UNMAPPED = """
SELECT unmapped_stage, count(*) AS deals FROM crm_links
WHERE provider = %s AND object_type = 'deal' AND unmapped_stage IS NOT NULL
  AND archived_at IS NULL AND merged_into IS NULL
GROUP BY unmapped_stage ORDER BY unmapped_stage
"""


def links(cur: Any, provider: str, object_type: str, remote_ids: Sequence[str]) -> dict[str, Row]:
    """The links of ``remote_ids`` that exist, by CRM id."""
    rows = fetch_all(cur, LINKS, (provider, object_type, list(remote_ids)))
    return {str(r["remote_id"]): r for r in rows}


def unlinked_contacts_by_email(cur: Any, emails: Sequence[str]) -> dict[str, str]:
    """Contacts of ours no CRM record is linked to yet, by lower-cased email (an earlier CSV
    import of the same people): the sync adopts them rather than create a twin."""
    if not emails:
        return {}
    rows = fetch_all(cur, CONTACTS_BY_EMAIL, (sorted({e.lower() for e in emails}),))
    return {str(r["email"]): str(r["id"]) for r in rows}


def unlinked_deals_by_key(cur: Any, keys: Sequence[str]) -> dict[str, str]:
    """Deals of ours no CRM record is linked to yet, by the key a CRM deal names them with
    (our id or external id): the sync adopts them rather than create a twin."""
    if not keys:
        return {}
    rows = fetch_all(cur, DEALS_BY_KEY, (sorted(set(keys)),))
    return {str(r["key"]): str(r["id"]) for r in rows}


def put_contacts(cur: Any, org_id: str, rows: Sequence[Mapping[str, Any]]) -> None:
    if rows:
        cur.execute(PUT_CONTACTS, (org_id, json.dumps(list(rows), default=str)))


def put_deals(cur: Any, org_id: str, rows: Sequence[Mapping[str, Any]]) -> None:
    if rows:
        cur.execute(PUT_DEALS, (org_id, json.dumps(list(rows), default=str)))


def put_links(
    cur: Any, org_id: str, provider: str, object_type: str, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Each row: ``remote_id``, ``entity_id``, ``remote_updated_at``, ``properties``,
    ``unmapped_stage``."""
    if rows:
        params = (org_id, provider, object_type, json.dumps(list(rows), default=str))
        cur.execute(PUT_LINKS, params)


def archive(cur: Any, provider: str, object_type: str, remote_id: str, when: datetime) -> bool:
    """The record is gone from the CRM: its link and our row archived. False: never seen."""
    row = fetch_one(cur, ARCHIVE_LINK, (when, provider, object_type, remote_id))
    if row is None:
        return False
    entity = row["entity_id"]
    if entity and object_type in ("contact", "deal"):
        cur.execute(ARCHIVE_CONTACT if object_type == "contact" else ARCHIVE_DEAL, (when, entity))
    return True


def merge(
    cur: Any,
    org_id: str,
    provider: str,
    object_type: str,
    merged_id: str,
    survivor_id: str,
    when: datetime,
) -> None:
    """``merged_id`` was merged into ``survivor_id``: its link follows the survivor. Our row
    moves to the survivor when the survivor has none; otherwise it is archived (a twin) and
    its deals point at the survivor's contact."""
    key = (org_id, provider, object_type, merged_id)
    row = fetch_one(cur, MERGE_LINK, (*key, survivor_id, *key))
    entity = row["entity_id"] if row else None
    if not entity:
        return
    cur.execute(ADOPT, (entity, provider, object_type, survivor_id))
    if cur.rowcount == 1:
        return
    survivor = links(cur, provider, object_type, [survivor_id]).get(survivor_id)
    if survivor is None:  # the survivor was never seen: it takes our row when it is read
        cur.execute(
            PUT_LINKS,
            (
                org_id,
                provider,
                object_type,
                json.dumps([{"remote_id": survivor_id, "entity_id": entity, "properties": {}}]),
            ),
        )
        return
    if object_type == "contact" and survivor["entity_id"]:
        cur.execute(REPOINT_DEALS, (survivor["entity_id"], entity))
    cur.execute(ARCHIVE_CONTACT if object_type == "contact" else ARCHIVE_DEAL, (when, entity))


def last_applied(cur: Any, provider: str) -> datetime | None:
    """The CRM's newest ``updatedAt`` the sync has applied (its clock, not ours)."""
    row = fetch_one(cur, LAST_APPLIED, (provider,))
    return row["at"] if row else None


def held_deals(cur: Any, provider: str, stages: Sequence[str]) -> list[Row]:
    """Deals kept while their ``pipeline/stage`` had no mapping."""
    return fetch_all(cur, HELD, (provider, list(stages)))


def unmapped(cur: Any, provider: str) -> list[Row]:
    """Each unmapped ``pipeline/stage`` deals wait in, with how many."""
    return fetch_all(cur, UNMAPPED, (provider,))
