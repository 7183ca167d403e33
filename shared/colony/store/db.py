"""Org-scoped transactions (CONST-003) over a per-instance pool of connections.

``Database`` is the per-instance pool: at most ``pool_size`` connections open at once (callers
past that wait, boundedly), each checked before it is handed out again so that one the server
or the network ended while it sat idle never fails a request (see ``Database``). How each
connection is opened is ``colony.store.connection``'s; how a statement's rows are read,
``colony.store.rows``' (both re-exported here, where every repository has long imported them).

``Database.transaction(org_id)`` sets ``app.org_id`` with ``set_config(..., true)`` (the
``SET LOCAL`` equivalent that takes any string), so row-level security scopes every
statement inside it and the setting vanishes at commit or rollback: a pooled connection never
carries one org's scope into the next transaction. ``BEGIN``, the scope and ``COMMIT`` take
one round trip each, and so does every parameterised statement in between
(``colony.store.wire``). ``Database.read`` runs one statement with its scope in a single
round trip (the Knowledge Core's retrieval).
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import pg8000.dbapi

from colony.errors import ConfigError, DatabaseError, OrgScopeError, ValidationFailed
from colony.store.connection import SSL_MODES, Connect, Role, connect_factory, parse_dsn
from colony.store.rows import Row, fetch_all, fetch_one, fetch_value
from colony.store.wire import Cursor, begin_sql, read_once

__all__ = [
    "SSL_MODES",
    "Connect",
    "Database",
    "Role",
    "Row",
    "connect_factory",
    "fetch_all",
    "fetch_one",
    "fetch_value",
    "parse_dsn",
]

PING_TIMEOUT = 5.0  # seconds a liveness ping of an idle connection may take


def _sqlstate(error: Exception) -> str:
    detail = error.args[0] if error.args else None
    return str(detail.get("C", "")) if isinstance(detail, dict) else ""


def _message(error: Exception) -> str:
    detail = error.args[0] if error.args else None
    return str(detail.get("M", error)) if isinstance(detail, dict) else str(error)


@dataclass(slots=True)
class _Pooled:
    """A pooled connection and when it was opened and last handed back."""

    conn: pg8000.dbapi.Connection
    opened: float  # when it was connected (the pool's clock)
    used: float  # when it was last handed back


class Database:
    """A bounded pool of connections for one role, handing out scoped transactions.

    At most ``pool_size`` connections are open at once. A caller past that waits for one to be
    released, up to ``acquire_timeout`` seconds, then gets ``DatabaseError``: size the pool
    from what the function runs at once (``colony.registry.functions.pool_size``), so every
    instance's pool together fits the server's ``max_connections`` (docs/deploy.md). Waiting
    is safe because no code holds a connection while it waits for another one.

    A connection is checked before it is handed out again, so one that the server or the
    network ended while it sat idle (a restart, a failover, ``pg_terminate_backend``, an idle
    timeout on the path) never fails a request:

    - older than ``max_lifetime`` seconds: closed and replaced by a fresh one;
    - idle for ``idle_check`` seconds or more, or with bytes waiting on its socket (a server
      that ends a session sends an error and closes it, and an idle connection is sent
      nothing else): pinged with one simple query, and replaced if the ping fails.

    A connection idle for less than ``idle_check`` with nothing on its socket is handed out
    as it is: the common case costs no round trip. ``clock`` (monotonic seconds) measures the
    ages and the wait.
    """

    def __init__(
        self,
        connect: Connect,
        *,
        pool_size: int = 4,
        acquire_timeout: float = 30.0,
        idle_check: float = 30.0,
        max_lifetime: float = 1800.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if pool_size < 1:
            raise ConfigError(f"a pool needs at least one connection, got pool_size={pool_size}")
        self._connect = connect
        self._pool_size = pool_size
        self._acquire_timeout = acquire_timeout
        self._idle_check = idle_check
        self._max_lifetime = max_lifetime
        self._clock = clock
        self._idle: list[_Pooled] = []  # most recently used last: reused first
        self._open = 0  # connections counted against pool_size: idle, in use or opening
        self._cond = threading.Condition(threading.Lock())

    @property
    def connect(self) -> Connect:
        """The factory this pool opens connections with, for a dedicated connection outside
        the pool (the chat hub's ``LISTEN``); in cloudsql mode it shares the one Connector."""
        return self._connect

    @property
    def pool_size(self) -> int:
        """The most connections this pool opens at once."""
        return self._pool_size

    def _acquire(self) -> _Pooled:
        with self._cond:
            deadline = self._clock() + self._acquire_timeout
            while not self._idle and self._open >= self._pool_size:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise DatabaseError(
                        f"all {self._pool_size} connections of this instance's pool stayed busy"
                        f" for {self._acquire_timeout:g} s; retry later"
                    )
                self._cond.wait(remaining)
            pooled = self._idle.pop() if self._idle else None
            if pooled is None:
                self._open += 1  # the slot is ours while we connect, outside the lock
        try:
            if pooled is not None:
                if self._usable(pooled):
                    return pooled
                _close(pooled.conn)
            return self._new()
        except BaseException:
            self._forget()
            raise

    def _new(self) -> _Pooled:
        try:
            conn = self._connect()
        except (pg8000.dbapi.Error, OSError) as error:
            raise DatabaseError(f"cannot connect to PostgreSQL: {error}") from error
        now = self._clock()
        return _Pooled(conn, opened=now, used=now)

    def _usable(self, pooled: _Pooled) -> bool:
        now = self._clock()
        if now - pooled.opened >= self._max_lifetime:
            return False
        if now - pooled.used >= self._idle_check or _has_input(pooled.conn):
            return _ping(pooled.conn)
        return True

    def _forget(self) -> None:
        """Give back the slot of a connection that was closed (or never opened)."""
        with self._cond:
            self._open -= 1
            self._cond.notify()

    def _release(self, pooled: _Pooled, healthy: bool) -> None:
        if healthy:
            pooled.used = self._clock()
            with self._cond:
                self._idle.append(pooled)
                self._cond.notify()
            return
        _close(pooled.conn)
        self._forget()

    @contextmanager
    def transaction(
        self,
        org_id: str | None,
        *,
        settings: Mapping[str, str] | None = None,
        advisory_lock: tuple[int, str] | None = None,
    ) -> Iterator[pg8000.dbapi.Cursor]:
        """Run a transaction scoped to ``org_id`` (``None``: no org, sees no org rows).

        ``settings`` are extra transaction-local parameters (e.g. pgvector scan options),
        set in the same statement as the org scope. ``advisory_lock`` (class, key) is taken
        (waited for) in that statement too, and held until the transaction ends.
        """
        # before a connection is taken: a bad value costs nothing
        begin = begin_sql(_scope(org_id, settings), advisory_lock)
        with self._connection() as conn:
            # BEGIN and the scope in one simple-query round trip (colony.store.wire), and a
            # cursor whose parameterised statements take one round trip each, not three.
            conn.execute_simple(begin)
            yield Cursor(conn)
            # The simple-query protocol: one round trip, where pg8000's commit() takes three.
            conn.execute_simple("COMMIT")

    def read(
        self,
        org_id: str | None,
        sql: str,
        params: Sequence[Any] = (),
        *,
        settings: Mapping[str, str] | None = None,
    ) -> list[Row]:
        """``sql``'s rows, read in a transaction of its own scoped as ``transaction`` scopes
        it, in one round trip (``colony.store.wire.read_once``: the scope and the statement,
        kept as ``fetch_all(..., cache=True)`` keeps it, in one implicit transaction), where a
        ``transaction`` around ``fetch_all`` waits three times. For one hot statement read
        alone (the Knowledge Core's retrieval)."""
        scope = _scope(org_id, settings)
        if not scope:
            raise ValidationFailed("Database.read needs an org scope or settings")
        with self._connection() as conn:
            context = read_once(conn, scope, sql, params)
        if context.columns is None or context.rows is None:
            return []
        names = [column["name"] for column in context.columns]
        return [dict(zip(names, row, strict=True)) for row in context.rows]

    @contextmanager
    def _connection(self) -> Iterator[pg8000.dbapi.Connection]:
        """A pooled connection for one transaction: rolled back if it fails, errors
        translated, and given back to the pool (closed if it may be broken)."""
        pooled = self._acquire()
        conn = pooled.conn
        healthy = True
        try:
            yield conn
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
            self._release(pooled, healthy)

    def close(self) -> None:
        """Close the idle connections (one in use is kept until it is released)."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._cond.notify_all()
        for pooled in idle:
            _close(pooled.conn)


def _scope(org_id: str | None, settings: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """The transaction-local settings of a transaction scoped to ``org_id``: the scope first."""
    if org_id is not None and (not isinstance(org_id, str) or not org_id.strip()):
        raise OrgScopeError("org_id must be a non-empty string")
    pairs = [("app.org_id", org_id)] if org_id is not None else []
    return pairs + list((settings or {}).items())


def _has_input(conn: pg8000.dbapi.Connection) -> bool:
    """Whether the server sent something to an idle connection: for a connection it ended,
    its error and end-of-file (an idle session is sent nothing else worth waiting for)."""
    sock = getattr(conn, "_usock", None)  # pg8000 keeps the raw socket here
    if sock is None:
        return True  # cannot tell: let the caller ping
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):  # closed already
        return True


def _ping(conn: pg8000.dbapi.Connection) -> bool:
    """One simple-query round trip, bounded: a connection the network dropped silently would
    otherwise block the request until TCP gives up."""
    sock = getattr(conn, "_usock", None)
    previous = sock.gettimeout() if sock is not None else None
    try:
        if sock is not None:
            sock.settimeout(PING_TIMEOUT)
        conn.execute_simple("SELECT 1")
        if sock is not None:
            sock.settimeout(previous)
        return True
    except Exception:  # whatever broke, the connection is unusable; the caller replaces it
        return False


def _close(conn: pg8000.dbapi.Connection) -> None:
    with suppress(Exception):  # closing a broken connection may itself fail
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
