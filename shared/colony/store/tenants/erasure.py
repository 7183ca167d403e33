"""Erasure: the org's rows in every org-scoped table, and the jobs that erase them.

What to delete comes from the schema registry (``migrations.ORG_SCOPED_TABLES``, which a
schema test holds equal to every table with an ``org_id``), and in which order from the
catalog: ``pg_constraint``'s foreign keys, children before parents (``delete_order``), so a
table added later is erased without anyone editing this module. Table and column names are
only ever interpolated from that registry or from the catalog, each checked against
``IDENTIFIER``.

``erasure_jobs`` (no RLS: it outlives the org it names) is the durable state of a job: the
phases done so far and, at the end, the verification report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from colony.errors import InternalError
from colony.store.db import Row, fetch_all, fetch_one, fetch_value
from colony.store.migrations import ORG_SCOPED_TABLES

IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
ORG_TABLE = "organizations"  # scoped on its own ``id``
# Tables kept on purpose: the migrations ledger, and the erasure record itself (ids and the
# report only). Every other table is searched by ``references``.
NOT_SEARCHED = ("colony_migrations", "erasure_jobs")

# A partition's rows are the partitioned table's rows (kc_chunks, issue 16): partitions are
# searched and deleted through their parent, so their cloned keys and columns are left out.
FOREIGN_KEYS = """
SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent
FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace AND NOT t.relispartition
"""

# Every column a reference could hide in: text, varchar, json, jsonb and text arrays.
SEARCHABLE_COLUMNS = """
SELECT c.table_name, c.column_name, c.udt_name FROM information_schema.columns c
JOIN pg_class t ON t.relname = c.table_name AND t.relnamespace = 'public'::regnamespace
WHERE c.table_schema = 'public' AND c.udt_name IN ('text', 'varchar', 'json', 'jsonb', '_text')
  AND NOT t.relispartition
ORDER BY c.table_name, c.ordinal_position
"""

CREATE_JOB = """
INSERT INTO erasure_jobs (target_org, contact_id, requested_by) VALUES (%s, %s, %s)
ON CONFLICT (target_org, coalesce(contact_id, '')) WHERE status = 'pending' DO NOTHING
RETURNING id
"""
OPEN_JOB = """
SELECT id FROM erasure_jobs
WHERE target_org = %s AND coalesce(contact_id, '') = coalesce(%s, '') AND status = 'pending'
"""
GET_JOB = """
SELECT id, target_org, contact_id, requested_by, status, phases_done, report, created_at,
       finished_at
FROM erasure_jobs WHERE id = %s
"""
MARK_PHASE = """
UPDATE erasure_jobs SET phases_done = phases_done || to_jsonb(%s::text)
WHERE id = %s AND NOT phases_done ? %s
"""
FINISH_JOB = """
UPDATE erasure_jobs SET status = 'done', report = %s::jsonb, finished_at = now()
WHERE id = %s AND status = 'pending'
"""
ORG_EXISTS = "SELECT 1 FROM organizations WHERE id = %s"
# The objects org rows name (GCS URIs); the caller keeps those in its own bucket.
ORG_OBJECT_URIS = """
SELECT transcript_uri AS uri FROM recordings WHERE transcript_uri IS NOT NULL
UNION SELECT gcs_uri FROM deployment_kits
"""
DROP_INDEXES = "SELECT colony_drop_org_indexes(%s)"
# The audit log is append-only for the application role: an org's erasure removes it through
# its owner's function, which checks that this org's erasure job is open (migration 0017).
ERASE_AUDIT = "SELECT colony_erase_audit(%s)"
APPEND_ONLY = {"audit_log": ERASE_AUDIT}
ERASE_REJECTIONS = "SELECT colony_erase_rejections(%s)"


def _ident(name: str) -> str:
    if not IDENTIFIER.fullmatch(name):
        raise InternalError(f"{name!r} is not a plain SQL identifier")
    return name


def scoped_tables() -> tuple[str, ...]:
    """Every table an org's rows live in: the registry plus ``organizations`` itself."""
    return (*ORG_SCOPED_TABLES, ORG_TABLE)


def delete_order(tables: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[str]:
    """``tables`` ordered so each comes before every table it references (children first);
    ``edges`` are (child, parent) foreign keys. Ties break by name, so the order is stable.
    A cycle among ``tables`` is an ``InternalError`` (a schema this could not erase)."""
    wanted = set(tables)
    parents: dict[str, set[str]] = {t: set() for t in wanted}
    children: dict[str, set[str]] = {t: set() for t in wanted}
    for child, parent in edges:
        if child in wanted and parent in wanted and child != parent:
            parents[child].add(parent)
            children[parent].add(child)
    order: list[str] = []
    ready = sorted(t for t in wanted if not children[t])  # nothing references it
    while ready:
        table = ready.pop(0)
        order.append(table)
        for parent in sorted(parents[table]):
            children[parent].discard(table)
            if not children[parent] and parent not in order and parent not in ready:
                ready.append(parent)
        ready.sort()
    if len(order) != len(wanted):
        raise InternalError(f"foreign keys form a cycle among {sorted(wanted - set(order))}")
    return order


def foreign_keys(cur: Any) -> list[tuple[str, str]]:
    return [(r["child"], r["parent"]) for r in fetch_all(cur, FOREIGN_KEYS)]


def org_delete_order(cur: Any) -> list[str]:
    """The org-scoped tables in the order their rows can be deleted (from the catalog)."""
    return delete_order(scoped_tables(), foreign_keys(cur))


def _key(table: str) -> str:
    return "id" if table == ORG_TABLE else "org_id"


def delete_org_rows(cur: Any, table: str, org_id: str) -> int:
    """Delete the org's rows from one registered table; returns how many went."""
    if table not in scoped_tables():
        raise InternalError(f"{table!r} is not an org-scoped table")
    if table in APPEND_ONLY:
        return int(fetch_value(cur, APPEND_ONLY[table], (org_id,)))
    cur.execute(f"DELETE FROM {_ident(table)} WHERE {_key(table)} = %s", (org_id,))
    return int(cur.rowcount)


def count_org_rows(cur: Any, org_id: str) -> dict[str, int]:
    """Rows the org still has, per registered table (the verification report)."""
    counts = {}
    for table in scoped_tables():
        sql = f"SELECT count(*) FROM {_ident(table)} WHERE {_key(table)} = %s"
        counts[table] = int(fetch_value(cur, sql, (org_id,)))
    return counts


def org_exists(cur: Any, org_id: str) -> bool:
    return fetch_one(cur, ORG_EXISTS, (org_id,)) is not None


def org_object_uris(cur: Any) -> list[str]:
    """Every ``gs://`` URI the org's rows name (under the org's scope)."""
    return sorted(str(r["uri"]) for r in fetch_all(cur, ORG_OBJECT_URIS))


def drop_org_indexes(cur: Any, org_id: str) -> int:
    """Drop the org's per-org HNSW indexes (``colony.knowledge.indexes``) as their owner."""
    return int(fetch_value(cur, DROP_INDEXES, (org_id,)))


def erase_rejections(cur: Any, org_id: str) -> int:
    """Delete the recorded rejections that claimed this org (as the table's owner)."""
    return int(fetch_value(cur, ERASE_REJECTIONS, (org_id,)))


# -- the schema-wide search: what the verification (and the tests) run


def searchable_columns(cur: Any) -> list[tuple[str, str, str]]:
    """(table, column, type) of every text-like column outside ``NOT_SEARCHED``."""
    return [
        (r["table_name"], r["column_name"], r["udt_name"])
        for r in fetch_all(cur, SEARCHABLE_COLUMNS)
        if r["table_name"] not in NOT_SEARCHED
    ]


def references(
    cur: Any, needles: Sequence[str], *, tables: Iterable[str] | None = None
) -> dict[str, int]:
    """``table.column`` → rows whose value contains any of ``needles``, for every text-like
    column of every table (generated from ``information_schema``), or of ``tables`` only;
    only columns with a hit. Under an org scope, row-level security limits it to that org's
    rows (the application role may not read every table: it passes the org's tables)."""
    wanted = [n for n in needles if n]
    only = set(tables) if tables is not None else None
    hits: dict[str, int] = {}
    if not wanted:
        return hits
    for table, column, _ in searchable_columns(cur):
        if only is not None and table not in only:
            continue
        sql = (
            f"SELECT count(*) FROM {_ident(table)} "
            f"WHERE {_ident(column)}::text LIKE ANY(%s::text[])"
        )
        found = int(fetch_value(cur, sql, ([f"%{_like(n)}%" for n in wanted],)))
        if found:
            hits[f"{table}.{column}"] = found
    return hits


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# -- jobs


def open_job(cur: Any, org_id: str, contact_id: str | None) -> str | None:
    """The job still running for this org (and contact), if any."""
    found = fetch_value(cur, OPEN_JOB, (org_id, contact_id))
    return str(found) if found is not None else None


def create_job(cur: Any, org_id: str, contact_id: str | None, requested_by: str) -> str:
    """The open job for this org (and contact), created if there is none: a repeated
    request resumes the same job instead of starting a second one."""
    created = fetch_value(cur, CREATE_JOB, (org_id, contact_id, requested_by))
    if created is not None:
        return str(created)
    return str(fetch_value(cur, OPEN_JOB, (org_id, contact_id)))


def get_job(cur: Any, job_id: str) -> Row | None:
    return fetch_one(cur, GET_JOB, (job_id,))


def mark_phase(cur: Any, job_id: str, phase: str) -> None:
    cur.execute(MARK_PHASE, (phase, job_id, phase))


def finish_job(cur: Any, job_id: str, report: Mapping[str, Any]) -> None:
    cur.execute(FINISH_JOB, (json.dumps(report, sort_keys=True), job_id))
