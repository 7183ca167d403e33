"""Import jobs, their rejected records, and the batch writes that turn records into contacts
(ENT-002) and deals (ENT-003).

Every function takes a cursor from ``Database.transaction(org_id)``: row-level security
scopes it. A batch is written in one transaction with its checkpoint (``checkpoint``), under
the job row's lock (``lock_job``), so a crash loses at most the batch in flight and a second
worker on the same job waits, then sees the batch already done.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

JOB_COLUMNS = """
id, org_id, kind, format, filename, object_name, declared_bytes, size_bytes, content_sha256,
status, failure,
encoding, rows_total, rows_done, rows_created, rows_updated, rows_rejected, requested_by,
created_at, started_at, finished_at
"""
CREATE_JOB = f"""
INSERT INTO import_jobs (id, org_id, kind, format, filename, object_name, declared_bytes,
                         requested_by)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
RETURNING {JOB_COLUMNS}
"""
JOB = f"SELECT {JOB_COLUMNS} FROM import_jobs WHERE id = %s"
LOCK_JOB = f"SELECT {JOB_COLUMNS} FROM import_jobs WHERE id = %s FOR UPDATE"
RECENT_JOBS = f"SELECT {JOB_COLUMNS} FROM import_jobs ORDER BY created_at DESC, id LIMIT %s"
QUEUE_JOB = """
UPDATE import_jobs SET status = 'queued', size_bytes = %s
WHERE id = %s AND status IN ('awaiting_upload', 'queued')
"""
START_JOB = """
UPDATE import_jobs SET status = 'running', encoding = %s, rows_total = %s,
    content_sha256 = coalesce(content_sha256, %s), started_at = coalesce(started_at, now())
WHERE id = %s
"""
FAIL_JOB = """
UPDATE import_jobs SET status = 'failed', failure = %s, finished_at = now() WHERE id = %s
"""
FINISH_JOB = """
UPDATE import_jobs SET status = 'completed', finished_at = now()
WHERE id = %s AND status = 'running'
"""
CHECKPOINT = """
UPDATE import_jobs SET rows_done = %s, rows_created = rows_created + %s,
    rows_updated = rows_updated + %s, rows_rejected = rows_rejected + %s
WHERE id = %s AND rows_done = %s
"""
INSERT_ERRORS = """
INSERT INTO import_errors (org_id, job_id, row_number, line, field, reason, value)
SELECT %s, %s, r.row_number, r.line, r.field, r.reason, r.value
FROM jsonb_to_recordset(%s::jsonb)
     AS r(row_number integer, line integer, field text, reason text, value text)
ON CONFLICT (org_id, job_id, row_number) DO NOTHING
"""
ERRORS = """
SELECT row_number AS row, line, field, reason, value FROM import_errors
WHERE job_id = %s ORDER BY row_number
"""
# Serialises the imports of one org (two files naming the same person must not both create
# her): a transaction-level advisory lock, released at commit.
LOCK_ORG_IMPORTS = "SELECT pg_advisory_xact_lock(hashtext('colony-import:' || %s))"

MATCH_CONTACTS = """
WITH k AS (SELECT %s::jsonb AS j)
SELECT id, external_id, lower(email) AS email, lower(name) AS name,
       lower(company_domain) AS domain
FROM contacts
WHERE external_id IN (SELECT jsonb_array_elements_text(j -> 'external_ids') FROM k)
   OR lower(email) IN (SELECT jsonb_array_elements_text(j -> 'emails') FROM k)
   OR (lower(name), lower(company_domain)) IN (
       SELECT e ->> 0, e ->> 1 FROM k, jsonb_array_elements(j -> 'names_domains') AS e)
"""
# Batches travel as one JSON array (``jsonb_to_recordset``): one parameter the driver sends
# as it is, where thousands of array elements would each be escaped in Python.
CONTACT_RECORD = """
    r(id text, external_id text, name text, title text, email text, company text,
      company_domain text, linkedin_url text, owner_id text)
"""
INSERT_CONTACTS = f"""
INSERT INTO contacts (org_id, id, external_id, name, title, email, company, company_domain,
                      linkedin_url, owner_id)
SELECT %s, r.id, r.external_id, r.name, r.title, r.email, r.company, r.company_domain,
       r.linkedin_url, r.owner_id
FROM jsonb_to_recordset(%s::jsonb) AS {CONTACT_RECORD}
"""
# A re-import updates: the file's name and company win; a cell the file leaves empty keeps
# what the row had (an export without titles does not erase them); an external id is set
# once, never replaced.
UPDATE_CONTACTS = f"""
UPDATE contacts c SET
    external_id = coalesce(c.external_id, r.external_id),
    name = r.name,
    title = coalesce(r.title, c.title),
    email = coalesce(r.email, c.email),
    company = r.company,
    company_domain = coalesce(r.company_domain, c.company_domain),
    linkedin_url = coalesce(r.linkedin_url, c.linkedin_url),
    owner_id = coalesce(r.owner_id, c.owner_id),
    updated_at = now()
FROM jsonb_to_recordset(%s::jsonb) AS {CONTACT_RECORD}
WHERE c.id = r.id
"""
MATCH_DEALS = """
SELECT id, external_id, lower(name) AS name FROM deals
WHERE external_id = ANY(%s::text[]) OR lower(name) = ANY(%s::text[])
"""
CONTACTS_BY_EMAIL = """
SELECT DISTINCT ON (lower(email)) lower(email) AS email, id FROM contacts
WHERE lower(email) = ANY(%s::text[]) ORDER BY lower(email), created_at
"""
DEAL_RECORD = """
    r(id text, external_id text, contact_id text, name text, stage text, value numeric,
      next_action text, close_date date, owner_id text)
"""
INSERT_DEALS = f"""
INSERT INTO deals (org_id, id, external_id, contact_id, name, stage, value, next_action,
                   close_date, owner_id)
SELECT %s, r.id, r.external_id, r.contact_id, r.name, r.stage, r.value, r.next_action,
       r.close_date, r.owner_id
FROM jsonb_to_recordset(%s::jsonb) AS {DEAL_RECORD}
"""
UPDATE_DEALS = f"""
UPDATE deals d SET
    external_id = coalesce(d.external_id, r.external_id),
    contact_id = coalesce(r.contact_id, d.contact_id),
    name = r.name,
    stage = r.stage,
    value = coalesce(r.value, d.value),
    next_action = coalesce(r.next_action, d.next_action),
    close_date = coalesce(r.close_date, d.close_date),
    owner_id = coalesce(r.owner_id, d.owner_id),
    updated_at = now()
FROM jsonb_to_recordset(%s::jsonb) AS {DEAL_RECORD}
WHERE d.id = r.id
"""


def create_job(
    cur: Any,
    *,
    job_id: str,
    org_id: str,
    kind: str,
    format: str,
    filename: str,
    object_name: str,
    declared_bytes: int,
    requested_by: str,
) -> Row:
    values = (job_id, org_id, kind, format, filename, object_name, declared_bytes, requested_by)
    row = fetch_one(cur, CREATE_JOB, values)
    assert row is not None  # INSERT … RETURNING returns its row
    return row


def job(cur: Any, job_id: str) -> Row | None:
    return fetch_one(cur, JOB, (job_id,))


def lock_job(cur: Any, job_id: str) -> Row | None:
    """The job row, locked until the transaction ends."""
    return fetch_one(cur, LOCK_JOB, (job_id,))


def recent_jobs(cur: Any, limit: int) -> list[Row]:
    return fetch_all(cur, RECENT_JOBS, (limit,))


def queue_job(cur: Any, job_id: str, size_bytes: int) -> bool:
    cur.execute(QUEUE_JOB, (size_bytes, job_id))
    return bool(cur.rowcount)


def start_job(cur: Any, job_id: str, encoding: str, rows_total: int, sha256: str) -> None:
    """Mark the job running; the file's digest is kept from the first attempt on."""
    cur.execute(START_JOB, (encoding, rows_total, sha256, job_id))


def fail_job(cur: Any, job_id: str, failure: str) -> None:
    cur.execute(FAIL_JOB, (failure, job_id))


def finish_job(cur: Any, job_id: str) -> None:
    cur.execute(FINISH_JOB, (job_id,))


def checkpoint(cur: Any, job_id: str, done_before: int, done: int, counts: Sequence[int]) -> bool:
    """Advance the job from ``done_before`` to ``done`` records, adding ``counts``
    (created, updated, rejected); False if the job was not at ``done_before``."""
    created, updated, rejected = counts
    cur.execute(CHECKPOINT, (done, created, updated, rejected, job_id, done_before))
    return bool(cur.rowcount)


def record_errors(cur: Any, org_id: str, job_id: str, errors: Sequence[Sequence[Any]]) -> None:
    """Store rejected records: each ``(row, line, field, reason, value)``."""
    if errors:
        names = ("row_number", "line", "field", "reason", "value")
        records = [dict(zip(names, error, strict=True)) for error in errors]
        cur.execute(INSERT_ERRORS, (org_id, job_id, json.dumps(records)))


def errors(cur: Any, job_id: str) -> list[Row]:
    return fetch_all(cur, ERRORS, (job_id,))


def lock_org_imports(cur: Any, org_id: str) -> None:
    cur.execute(LOCK_ORG_IMPORTS, (org_id,))


def match_contacts(
    cur: Any, external_ids: list[str], emails: list[str], names_domains: list[tuple[str, str]]
) -> list[Row]:
    """Existing contacts sharing an external id, an email or a (name, domain) with the
    batch (all compared in lower case but the external id)."""
    keys = {"external_ids": external_ids, "emails": emails, "names_domains": names_domains}
    return fetch_all(cur, MATCH_CONTACTS, (json.dumps(keys),))


def _records(rows: Sequence[dict[str, Any]]) -> str:
    return json.dumps(list(rows), default=str)  # Decimal and date as their text


def insert_contacts(cur: Any, org_id: str, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        cur.execute(INSERT_CONTACTS, (org_id, _records(rows)))


def update_contacts(cur: Any, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        cur.execute(UPDATE_CONTACTS, (_records(rows),))


def match_deals(cur: Any, external_ids: list[str], names: list[str]) -> list[Row]:
    return fetch_all(cur, MATCH_DEALS, (external_ids, names))


def contacts_by_email(cur: Any, emails: list[str]) -> dict[str, str]:
    """Lower-cased email → the oldest contact with it."""
    return {str(r["email"]): str(r["id"]) for r in fetch_all(cur, CONTACTS_BY_EMAIL, (emails,))}


def insert_deals(cur: Any, org_id: str, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        cur.execute(INSERT_DEALS, (org_id, _records(rows)))


def update_deals(cur: Any, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        cur.execute(UPDATE_DEALS, (_records(rows),))
