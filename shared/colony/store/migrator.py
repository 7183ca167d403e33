"""Apply the append-only migrations as the owner role and grant the application role."""

from __future__ import annotations

import re
from collections.abc import Callable

import pg8000.dbapi

from colony.errors import ConfigError
from colony.store.migrations import migrations

_TRACK = """
CREATE TABLE IF NOT EXISTS colony_migrations (
    name        text PRIMARY KEY,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""
_LOCK = "SELECT pg_advisory_xact_lock(7243501)"  # one migrator at a time
_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def migrate(
    conn: pg8000.dbapi.Connection, *, dim: int, progress: Callable[[str], None] | None = None
) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction; return their names."""
    applied: list[str] = []
    for migration in migrations(dim):
        cur = conn.cursor()
        cur.execute(_LOCK)
        cur.execute(_TRACK)
        cur.execute("SELECT 1 FROM colony_migrations WHERE name = %s", (migration.name,))
        if cur.fetchone():
            conn.commit()
            continue
        if progress:
            progress(migration.name)
        # pg8000 sends one statement per execute in the extended protocol; the simple-query
        # protocol (no parameters) runs the whole migration script in this transaction.
        conn.execute_simple(migration.sql)
        cur.execute("INSERT INTO colony_migrations (name) VALUES (%s)", (migration.name,))
        conn.commit()
        applied.append(migration.name)
    return applied


def ensure_app_role_grants(conn: pg8000.dbapi.Connection, role: str) -> None:
    """Grant the application role DML on every table (RLS then scopes it); idempotent."""
    if not _ROLE.match(role):
        raise ConfigError(f"application role {role!r} must be a lower-case SQL identifier")
    conn.execute_simple(
        f"GRANT USAGE ON SCHEMA public TO {role};"
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};"
        f"REVOKE ALL ON colony_migrations FROM {role};"
        f"REVOKE SELECT, UPDATE, DELETE ON rejected_deliveries FROM {role};"
        # Notion handshake tokens become signing secrets: written by the webhook, read only
        # by the operator (owner role); no org owns them, so RLS cannot scope them.
        # It writes them only through record_notion_verification (migration 0014), which
        # bounds how many are kept and how fast they may come: no INSERT around it.
        f"REVOKE SELECT, INSERT, UPDATE, DELETE ON notion_verifications FROM {role};"
        # The audit log is append-only for the application (issue 14): history is never
        # rewritten by the code it records.
        f"REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM {role};"
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role};"
        # erasure (migration 0013): the two owner-only steps, for one org at a time
        f"GRANT EXECUTE ON FUNCTION colony_drop_org_indexes(text) TO {role};"
        f"GRANT EXECUTE ON FUNCTION colony_erase_rejections(text) TO {role};"
        # Knowledge Core tiering (migration 0023): an org's move to its own partition
        f"GRANT EXECUTE ON FUNCTION colony_kc_stage(text) TO {role};"
        f"GRANT EXECUTE ON FUNCTION colony_kc_build(text, text) TO {role};"
        f"GRANT EXECUTE ON FUNCTION colony_kc_cutover(text, integer) TO {role};"
        # Audit history goes only with an erasure that stays on the record (migration 0017).
        f"REVOKE DELETE, TRUNCATE ON erasure_jobs FROM {role};"
        f"GRANT EXECUTE ON FUNCTION colony_erase_audit(text) TO {role};"
        f"GRANT EXECUTE ON FUNCTION colony_redact_audit(text, text[], text) TO {role};"
        # the org ids a schedule serves, for its fan-out (migration 0026)
        f"GRANT EXECUTE ON FUNCTION colony_scheduled_orgs(text, text, integer) TO {role};"
    )
    conn.commit()
