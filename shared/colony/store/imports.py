"""Import jobs, their rejected records, and the batch writes that turn records into contacts
(ENT-002) and deals (ENT-003).

Every function takes a cursor from ``Database.transaction(org_id)``: row-level security
scopes it. A batch is written in one transaction with its checkpoint (``checkpoint``), under
the job row's lock (``lock_job``), so a crash loses at most the batch in flight and a second
worker on the same job waits, then sees the batch already done.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

JOB_COLUMNS = """
id, org_id, kind, format, filename, object_name, declared_bytes, size_bytes, status, failure,
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
    started_at = coalesce(started_at, now())
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
SELECT %s, %s, * FROM unnest(%s::int[], %s::int[], %s::text[], %s::text[], %s::text[])
ON CONFLICT (job_id, row_number) DO NOTHING
"""
ERRORS = """
SELECT row_number AS row, line, field, reason, value FROM import_errors
WHERE job_id = %s ORDER BY row_number
"""
# Serialises the imports of one org (two files naming the same person must not both create
# her): a transaction-level advisory lock, released at commit.
LOCK_ORG_IMPORTS = "SELECT pg_advisory_xact_lock(hashtext('colony-import:' || %s))"

MATCH_CONTACTS = """
SELECT id, external_id, lower(email) AS email, lower(name) AS name,
       lower(company_domain) AS domain
FROM contacts
WHERE external_id = ANY(%s::text[])
   OR lower(email) = ANY(%s::text[])
   OR (lower(name), lower(company_domain)) IN (
       SELECT n, d FROM unnest(%s::text[], %s::text[]) AS k(n, d))
"""
CONTACT_FIELDS = (
    "id",
    "external_id",
    "name",
    "title",
    "email",
    "company",
    "company_domain",
    "linkedin_url",
)
INSERT_CONTACTS = """
INSERT INTO contacts (org_id, id, external_id, name, title, email, company, company_domain,
                      linkedin_url)
SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
                         %s::text[], %s::text[], %s::text[])
"""
# A re-import updates: the file's name and company win; a cell the file leaves empty keeps
# what the row had (an export without titles does not erase them); an external id is set
# once, never replaced.
UPDATE_CONTACTS = """
UPDATE contacts c SET
    external_id = coalesce(c.external_id, u.external_id),
    name = u.name,
    title = coalesce(u.title, c.title),
    email = coalesce(u.email, c.email),
    company = u.company,
    company_domain = coalesce(u.company_domain, c.company_domain),
    linkedin_url = coalesce(u.linkedin_url, c.linkedin_url),
    updated_at = now()
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
            %s::text[], %s::text[])
     AS u(id, external_id, name, title, email, company, company_domain, linkedin_url)
WHERE c.id = u.id
"""
MATCH_DEALS = """
SELECT id, external_id, lower(name) AS name FROM deals
WHERE external_id = ANY(%s::text[]) OR lower(name) = ANY(%s::text[])
"""
CONTACTS_BY_EMAIL = """
SELECT DISTINCT ON (lower(email)) lower(email) AS email, id FROM contacts
WHERE lower(email) = ANY(%s::text[]) ORDER BY lower(email), created_at
"""
DEAL_FIELDS = (
    "id",
    "external_id",
    "contact_id",
    "name",
    "stage",
    "value",
    "next_action",
    "close_date",
)
INSERT_DEALS = """
INSERT INTO deals (org_id, id, external_id, contact_id, name, stage, value, next_action,
                   close_date)
SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
                         %s::numeric[], %s::text[], %s::date[])
"""
UPDATE_DEALS = """
UPDATE deals d SET
    external_id = coalesce(d.external_id, u.external_id),
    contact_id = coalesce(u.contact_id, d.contact_id),
    name = u.name,
    stage = u.stage,
    value = coalesce(u.value, d.value),
    next_action = coalesce(u.next_action, d.next_action),
    close_date = coalesce(u.close_date, d.close_date),
    updated_at = now()
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::numeric[],
            %s::text[], %s::date[])
     AS u(id, external_id, contact_id, name, stage, value, next_action, close_date)
WHERE d.id = u.id
"""


def create_job(cur: Any, values: Sequence[Any]) -> Row:
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


def start_job(cur: Any, job_id: str, encoding: str, rows_total: int) -> None:
    cur.execute(START_JOB, (encoding, rows_total, job_id))


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
        columns = [list(c) for c in zip(*errors, strict=True)]
        cur.execute(INSERT_ERRORS, (org_id, job_id, *columns))


def errors(cur: Any, job_id: str) -> list[Row]:
    return fetch_all(cur, ERRORS, (job_id,))


def lock_org_imports(cur: Any, org_id: str) -> None:
    cur.execute(LOCK_ORG_IMPORTS, (org_id,))


def match_contacts(
    cur: Any, external_ids: list[str], emails: list[str], names_domains: list[tuple[str, str]]
) -> list[Row]:
    """Existing contacts sharing an external id, an email or a (name, domain) with the
    batch (all compared in lower case but the external id)."""
    names = [n for n, _ in names_domains]
    domains = [d for _, d in names_domains]
    return fetch_all(cur, MATCH_CONTACTS, (external_ids, emails, names, domains))


def _columns(rows: Sequence[dict[str, Any]], fields: Sequence[str]) -> list[list[Any]]:
    return [[row[f] for row in rows] for f in fields]


def insert_contacts(cur: Any, org_id: str, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        cur.execute(INSERT_CONTACTS, (org_id, *_columns(rows, CONTACT_FIELDS)))


def update_contacts(cur: Any, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        cur.execute(UPDATE_CONTACTS, tuple(_columns(rows, CONTACT_FIELDS)))


def match_deals(cur: Any, external_ids: list[str], names: list[str]) -> list[Row]:
    return fetch_all(cur, MATCH_DEALS, (external_ids, names))


def contacts_by_email(cur: Any, emails: list[str]) -> dict[str, str]:
    """Lower-cased email → the oldest contact with it."""
    return {str(r["email"]): str(r["id"]) for r in fetch_all(cur, CONTACTS_BY_EMAIL, (emails,))}


def insert_deals(cur: Any, org_id: str, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        cur.execute(INSERT_DEALS, (org_id, *_columns(rows, DEAL_FIELDS)))


def update_deals(cur: Any, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        cur.execute(UPDATE_DEALS, tuple(_columns(rows, DEAL_FIELDS)))
