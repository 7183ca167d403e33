"""One pg8000 code path for every database mode, and org-scoped transactions (CONST-003).

``connect_factory(settings, role)`` returns a zero-argument callable that opens a pg8000 DB-API
connection, for the application role or the owner role:

- ``dsn``: any ``postgresql://`` URL (``?host=/dir`` for a unix socket);
- ``cloudsql``: the Cloud SQL Python Connector with pg8000 (IAM auth unless a password is set);
- ``embedded``: the local stack's PostgreSQL (``colony.local``), started on first use.

``Database.transaction(org_id)`` sets ``app.org_id`` with ``set_config(..., true)`` (the
``SET LOCAL`` equivalent that takes a bind parameter), so row-level security scopes every
statement inside it and the setting vanishes at commit or rollback: a pooled connection never
carries one org's scope into the next transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, unquote, urlparse

import pg8000.dbapi

from colony.errors import ConfigError, DatabaseError, OrgScopeError, ValidationFailed
from colony.settings import Settings

if TYPE_CHECKING:
    import numpy as np

Row = dict[str, Any]
Connect = Callable[[], pg8000.dbapi.Connection]
Role = Literal["app", "owner"]

_VECTOR_OID = "SELECT oid FROM pg_type WHERE oid = to_regtype('vector')"


def parse_dsn(dsn: str) -> dict[str, Any]:
    """Turn a ``postgresql://`` URL into pg8000 keyword arguments."""
    url = urlparse(dsn)
    if url.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"database URL must start with postgresql://, got {url.scheme!r}")
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    kwargs: dict[str, Any] = {
        "user": unquote(url.username or query.get("user", "postgres")),
        "database": unquote(url.path.lstrip("/")) or query.get("dbname", "postgres"),
    }
    password = url.password or query.get("password")
    if password:
        kwargs["password"] = unquote(password)
    port = url.port or int(query.get("port", 5432))
    socket_dir = query.get("host")
    if socket_dir and socket_dir.startswith("/"):
        kwargs["unix_sock"] = f"{socket_dir}/.s.PGSQL.{port}"
    else:
        kwargs["host"] = url.hostname or socket_dir or "localhost"
        kwargs["port"] = port
    return kwargs


def _vector_text(value: np.ndarray) -> str:
    # 9 significant digits round-trip a float32 exactly, and format faster than repr.
    return "[" + ",".join(map("{:.9g}".format, value.ravel().tolist())) + "]"


def _parse_vector(text: str) -> np.ndarray:
    import numpy as np

    return np.array(text[1:-1].split(","), dtype=np.float32)


def register_vector(conn: pg8000.dbapi.Connection) -> None:
    """Teach a connection to send numpy arrays as ``vector`` and read ``vector`` as numpy."""
    import numpy as np  # here, not at import: functions that never touch vectors skip it

    cur = conn.cursor()
    cur.execute(_VECTOR_OID)
    row = cur.fetchone()
    conn.rollback()
    conn.register_out_adapter(np.ndarray, _vector_text)
    if row and row[0]:
        conn.register_in_adapter(row[0], _parse_vector)


def connect_factory(settings: Settings, role: Role = "app") -> Connect:
    """Return a callable opening a connection for ``role`` in the configured mode."""
    if settings.db_mode == "dsn":
        dsn = settings.db_dsn if role == "app" else settings.db_owner_dsn
        if not dsn:
            raise ConfigError(
                "COLONY_DB_OWNER_DSN is required to migrate in dsn mode (the owner role's URL)"
            )
        kwargs = parse_dsn(dsn)
        return lambda: pg8000.dbapi.connect(**kwargs)
    if settings.db_mode == "cloudsql":
        return _cloudsql_factory(settings, role)
    # Local-only machinery is imported lazily: deployed functions never run in embedded mode
    # (Settings refuses it in production), so their bundles never load it.
    from colony.local.embedded import embedded_dsn

    kwargs = parse_dsn(embedded_dsn(settings, role))
    return lambda: pg8000.dbapi.connect(**kwargs)


def _cloudsql_factory(settings: Settings, role: Role) -> Connect:
    from google.cloud.sql.connector import Connector

    if role == "app":
        user, password = settings.db_app_role, settings.db_password
    else:
        if not settings.db_owner_user:
            raise ConfigError("COLONY_DB_OWNER_USER is required to migrate in cloudsql mode")
        user, password = settings.db_owner_user, settings.db_owner_password
    connector = Connector(refresh_strategy="lazy")
    instance = settings.cloudsql_instance
    assert instance  # Settings.from_env requires it in cloudsql mode

    def connect() -> pg8000.dbapi.Connection:
        extra: dict[str, Any] = {"password": password} if password else {"enable_iam_auth": True}
        conn: pg8000.dbapi.Connection = connector.connect(
            instance, "pg8000", user=user, db=settings.db_name, **extra
        )
        return conn

    return connect


def _sqlstate(error: Exception) -> str:
    detail = error.args[0] if error.args else None
    return str(detail.get("C", "")) if isinstance(detail, dict) else ""


def _message(error: Exception) -> str:
    detail = error.args[0] if error.args else None
    return str(detail.get("M", error)) if isinstance(detail, dict) else str(error)


class Database:
    """A small pool of connections for one role, handing out scoped transactions."""

    def __init__(self, connect: Connect, *, pool_size: int = 4) -> None:
        self._connect = connect
        self._idle: list[pg8000.dbapi.Connection] = []
        self._lock = threading.Lock()
        self._pool_size = pool_size

    def _acquire(self) -> pg8000.dbapi.Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        try:
            conn = self._connect()
        except (pg8000.dbapi.InterfaceError, OSError) as error:
            raise DatabaseError(f"cannot connect to PostgreSQL: {error}") from error
        register_vector(conn)
        return conn

    def _release(self, conn: pg8000.dbapi.Connection, healthy: bool) -> None:
        with self._lock:
            if healthy and len(self._idle) < self._pool_size:
                self._idle.append(conn)
                return
        with suppress(Exception):  # closing a broken connection may itself fail
            conn.close()

    @contextmanager
    def transaction(
        self, org_id: str | None, *, settings: Mapping[str, str] | None = None
    ) -> Iterator[pg8000.dbapi.Cursor]:
        """Run a transaction scoped to ``org_id`` (``None``: no org, sees no org rows).

        ``settings`` are extra transaction-local parameters (e.g. pgvector scan options),
        set in the same statement as the org scope.
        """
        if org_id is not None and (not isinstance(org_id, str) or not org_id.strip()):
            raise OrgScopeError("org_id must be a non-empty string")
        pairs = [("app.org_id", org_id)] if org_id is not None else []
        pairs += list((settings or {}).items())
        conn = self._acquire()
        healthy = True
        try:
            cur = conn.cursor()
            if pairs:
                sql = "SELECT " + ", ".join("set_config(%s, %s, true)" for _ in pairs)
                cur.execute(sql, tuple(x for pair in pairs for x in pair))
            yield cur
            # The simple-query protocol: one round trip, where pg8000's commit() takes three.
            conn.execute_simple("COMMIT")
        except pg8000.dbapi.DatabaseError as error:
            healthy = _rollback(conn)
            raise _translate(error) from error
        except (pg8000.dbapi.InterfaceError, OSError) as error:
            healthy = False
            raise DatabaseError(f"lost the PostgreSQL connection: {error}") from error
        except BaseException:
            healthy = _rollback(conn)
            raise
        finally:
            self._release(conn, healthy)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _rollback(conn: pg8000.dbapi.Connection) -> bool:
    try:
        conn.execute_simple("ROLLBACK")
        return True
    except Exception:  # the connection is unusable; the caller drops it
        return False


def _translate(error: Exception) -> Exception:
    state, message = _sqlstate(error), _message(error)
    if state == "42501" and "row-level security" in message:
        return OrgScopeError(f"refused by org isolation: {message}")
    if state.startswith("23") or state.startswith("22"):
        return ValidationFailed(f"rejected by the database: {message}")
    return DatabaseError(f"PostgreSQL error {state or '?'}: {message}")


def fetch_all(cur: pg8000.dbapi.Cursor, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """Execute ``sql`` and return its rows as dicts keyed by column name."""
    cur.execute(sql, tuple(params))
    if cur.description is None:
        return []
    names = [column[0] for column in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def fetch_one(cur: pg8000.dbapi.Cursor, sql: str, params: Sequence[Any] = ()) -> Row | None:
    rows = fetch_all(cur, sql, params)
    return rows[0] if rows else None


def fetch_value(cur: pg8000.dbapi.Cursor, sql: str, params: Sequence[Any] = ()) -> Any:
    """Execute ``sql`` and return the first column of its first row (None if no row)."""
    cur.execute(sql, tuple(params))
    row = cur.fetchone()
    return row[0] if row else None
