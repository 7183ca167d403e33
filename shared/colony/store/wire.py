"""How statements go over the wire: each costs one round trip to PostgreSQL, not three or four.

pg8000's DB-API cursor runs a statement with parameters as three exchanges, each ended by a
Sync it waits on: Parse; Describe; Bind and Execute. ``Cursor.execute`` sends Parse, Bind,
Describe (of the portal), Execute and one Sync together and then reads the replies, as libpq's
``PQexecParams`` does: the same messages meaning the same thing (an unnamed statement, its
parameters as text with types the server infers, rows as text), one wait instead of three.
pg8000 itself only reads what Describe says to decode the rows, so nothing is lost by asking
for it in the same exchange. Statements without parameters (pg8000's simple-query path: one
round trip already), COPY streams and ``executemany`` are pg8000's own.

``begin_sql`` is the other saving: ``BEGIN`` and the transaction-local settings (the org scope
first of all) as one simple-query batch, where ``BEGIN`` and a parameterised ``set_config``
would be two exchanges (four with pg8000's cursor). The simple-query protocol takes no
parameters, so the values are sent as string literals: ``E'...'`` with every backslash and
quote doubled, which PostgreSQL reads back verbatim whatever ``standard_conforming_strings``
says; a NUL, which no PostgreSQL text can hold, is refused.

``prepared(cur, sql, params)`` is for the few statements run on every durable step: a
statement prepared once per connection (Parse and Describe, one round trip, the first time)
and then executed by name (Bind, Execute, Sync: one round trip), as asyncpg and psycopg 3 do
for repeated statements. It saves the server parsing, analysing and planning it each time,
which for ``colony.store.steps``'s claim (a CTE with an ``INSERT ... ON CONFLICT`` under
row-level security) costs more than the round trip it saves (about 0.3 ms against 0.05 ms
once prepared, on the embedded server). A named statement lives as long as its session (a
rollback keeps it), and the pool recycles connections (``max_lifetime``); PostgreSQL
re-plans it after a schema change by itself, and only refuses it if a column it returns
changed type, which a migration of these tables would have to do on purpose.

``read_once`` goes one step further for a statement read alone (``Database.read``): the
``set_config`` calls of the scope and the statement are executed before a single Sync, which
the server runs as one implicit transaction, so the whole read is one round trip. And a
parameter with a ``pg_binary`` attribute (``colony.vectors.VectorParam``) is bound in binary
format, which its type's receive function reads, where every other parameter goes as text.

This leans on pg8000's connection internals (``send_PARSE``, ``send_BIND``, ``send_EXECUTE``,
``handle_messages``, ``_send_message``), which is why pg8000 is pinned (constraints.txt) and
``tests/test_db.py`` counts the round trips through a proxy: an upgrade that changes them
fails there, not in production.
"""

from __future__ import annotations

import functools
import itertools
import struct
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from weakref import WeakKeyDictionary

import pg8000.dbapi
from pg8000.converters import make_param, make_params
from pg8000.core import Context

from colony.errors import ValidationFailed

_DESCRIBE_PORTAL = (b"D", b"P\x00")  # Describe the unnamed portal: its RowDescription / NoData
_SYNC = (b"S", b"")
_H = struct.Struct("!h")  # Int16 of the protocol
_I = struct.Struct("!i")  # Int32

# connection → statement text → (name, columns, decoders), as pg8000's prepare_statement
# returns them; weak, so a closed connection's entries go with it.
_PREPARED: WeakKeyDictionary[Any, dict[str, tuple[bytes, Any, Any]]] = WeakKeyDictionary()
# connection → statement text → statement name, least recently used first (``cached``).
_CACHED: WeakKeyDictionary[Any, OrderedDict[str, bytes]] = WeakKeyDictionary()
_CACHED_NAMES = itertools.count()
CACHED_PER_CONNECTION = 64


def literal(value: str) -> str:
    """``value`` as a PostgreSQL string literal, for the simple-query protocol."""
    if "\x00" in value:
        raise ValidationFailed("a database setting cannot contain a NUL character")
    return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def begin_sql(
    settings: Sequence[tuple[str, str]], advisory_lock: tuple[int, str] | None = None
) -> str:
    """``BEGIN`` and ``set_config(name, value, true)`` for each setting, as one batch; with
    ``advisory_lock`` (class, key), then ``pg_advisory_xact_lock(class, hashtext(key))`` too,
    so a transaction that starts by waiting for its lock costs no extra round trip."""
    sql = "BEGIN"
    if settings:
        sql += f"; {_set_configs(settings)}"
    if advisory_lock is not None:
        kind, key = advisory_lock
        sql += f"; SELECT pg_advisory_xact_lock({int(kind)}, hashtext({literal(key)}))"
    return sql


def _set_configs(settings: Sequence[tuple[str, str]]) -> str:
    """One ``SELECT`` of ``set_config(name, value, true)`` per setting, values as literals."""
    return "SELECT " + ", ".join(
        f"set_config({literal(k)}, {literal(v)}, true)" for k, v in settings
    )


def prepared(cur: Any, operation: str, args: Sequence[Any]) -> None:
    """``cur.execute(operation, args)``, as a statement prepared once per connection."""
    if isinstance(cur, Cursor):
        cur.execute_prepared(operation, args)
    else:  # a plain DB-API cursor (a caller's own connection): the ordinary way
        cur.execute(operation, tuple(args))


def cached(cur: Any, operation: str, args: Sequence[Any]) -> None:
    """``cur.execute(operation, args)`` in one round trip, parsed and planned once per
    connection while it stays among the connection's ``CACHED_PER_CONNECTION`` most recent.

    For statements whose text varies (the Knowledge Core's retrieval names its org and
    domains as literals, so each (org, domains) is its own text): unlike ``prepared`` a miss
    costs no extra round trip (Parse goes with Bind and Execute, as ``Cursor.execute`` sends
    them), and the least recently used statement is closed in the same exchange once the
    connection holds the most it may, so a connection serving many orgs keeps a bounded set.
    """
    if isinstance(cur, Cursor):
        cur.execute_cached(operation, args)
    else:  # a plain DB-API cursor (a caller's own connection): the ordinary way
        cur.execute(operation, tuple(args))


@functools.lru_cache(maxsize=1024)
def _numbered(operation: str) -> str:
    """``operation`` with pg8000's ``%s`` placeholders numbered (``$1``...), once per text.

    pg8000 scans the text char by char on every execute; for the Knowledge Core's retrieval
    (1.5 kB of SQL) that was ~1.3 ms of a ~5 ms query, measured with cProfile. With the
    ``format`` paramstyle the parameters keep their order, so only the text needs converting.
    """
    statement, _ = pg8000.dbapi.convert_paramstyle("format", operation, ())
    return str(statement)


def _converted(operation: str, args: Any) -> tuple[str, Any]:
    if pg8000.dbapi.paramstyle == "format" and isinstance(args, list | tuple):
        return _numbered(operation), args
    return pg8000.dbapi.convert_paramstyle(pg8000.dbapi.paramstyle, operation, args)


class Cursor(pg8000.dbapi.Cursor):
    """pg8000's DB-API cursor whose parameterised statements take one round trip."""

    def execute(self, operation: str, args: Any = (), stream: Any = None) -> None:
        if len(args) == 0 or stream is not None:
            super().execute(operation, args, stream)
            return
        conn = self._begun()
        statement, values = _converted(operation, args)
        context = Context(statement)
        conn.send_PARSE(b"\x00", statement, self._input_oids)
        _send_portal(conn, b"\x00", values)
        conn._sock.flush()
        conn.handle_messages(context)
        self._done(context)

    def execute_prepared(self, operation: str, args: Sequence[Any]) -> None:
        """Execute ``operation`` by name, preparing it first on this connection's first use."""
        conn = self._begun()
        statement, values = _converted(operation, tuple(args))
        cache = _PREPARED.setdefault(conn, {})
        entry = cache.get(statement)
        if entry is None:
            entry = cache[statement] = conn.prepare_statement(statement, ())
        name, columns, decoders = entry
        params = make_params(conn.py_types, values)
        self._done(conn.execute_named(name, params, columns, decoders, statement))

    def execute_cached(self, operation: str, args: Sequence[Any]) -> None:
        """``execute`` by a statement name this connection keeps (``cached``)."""
        conn = self._begun()
        statement, values = _converted(operation, tuple(args))
        name = _send_cached(conn, statement, values)
        context = Context(statement)
        conn._sock.flush()
        # Raises on an error, before the text is remembered: one that failed to parse names no
        # statement. (One that parsed and then failed to execute stays on the server, unnamed
        # here, until the pool recycles the connection: rare, and bounded by max_lifetime.)
        conn.handle_messages(context)
        _CACHED[conn][statement] = name
        self._done(context)

    def _begun(self) -> Any:
        """The connection, in a transaction (pg8000's implicit BEGIN, as its cursor does)."""
        conn = self._c
        if conn is None:
            raise pg8000.dbapi.InterfaceError("Cursor closed")
        if conn._sock is None:
            raise pg8000.dbapi.InterfaceError("connection is closed")
        if not conn._in_transaction and not conn.autocommit:
            conn.execute_simple("begin transaction")
        return conn

    def _done(self, context: Any) -> None:
        self._context = context
        self._row_iter = None if context.rows is None else iter(context.rows)
        self._input_oids = ()
        self.input_types: list[Any] = []


def _send_cached(conn: Any, statement: str, values: Sequence[Any]) -> bytes:
    """Send Bind, Describe, Execute and Sync of ``statement`` by the name this connection
    keeps for it, with Parse first when it has none (closing the least recently used once the
    connection holds ``CACHED_PER_CONNECTION``); nothing is flushed or read. The caller
    remembers the name once the server has answered without an error."""
    cache = _CACHED.setdefault(conn, OrderedDict())
    name = cache.get(statement)
    if name is not None:
        cache.move_to_end(statement)
    else:
        while len(cache) >= CACHED_PER_CONNECTION:
            # forgotten first: if the exchange fails the server may have closed it already
            conn._send_message(b"C", b"S" + cache.popitem(last=False)[1])
        name = f"colony_cached_{next(_CACHED_NAMES)}".encode("ascii") + b"\x00"
        conn.send_PARSE(name, statement, ())
    _send_portal(conn, name, values)
    return name


def _send_portal(conn: Any, statement_name: bytes, values: Sequence[Any]) -> None:
    """Bind ``values`` to the statement into the unnamed portal, Describe it, Execute it and
    Sync (sent, not flushed). As pg8000's ``send_BIND``, except that a value with a
    ``pg_binary`` attribute (``colony.vectors.VectorParam``) goes in binary format, which the
    type's receive function reads: a 1536-d query vector is 6 kB of floats instead of ~17 kB
    of decimal text to format here and parse there."""
    message = bytearray(b"\x00" + statement_name + _H.pack(len(values)))
    message += b"".join(_H.pack(1 if hasattr(v, "pg_binary") else 0) for v in values)
    message += _H.pack(len(values))
    for value in values:
        if hasattr(value, "pg_binary"):
            data = value.pg_binary
        else:
            text = make_param(conn.py_types, value)
            data = None if text is None else text.encode(conn._client_encoding)
        message += _I.pack(-1) if data is None else _I.pack(len(data)) + data
    message += _H.pack(0)  # every result column as text
    conn._send_message(b"B", bytes(message))
    conn._send_message(*_DESCRIBE_PORTAL)
    conn.send_EXECUTE()
    conn._send_message(*_SYNC)


def read_once(conn: Any, settings: Sequence[tuple[str, str]], operation: str, args: Any) -> Any:
    """``operation`` (``cached``) with transaction-local ``settings`` (the org scope first), in
    one round trip and one transaction: the ``set_config`` calls and the statement are
    executed before a single Sync, so the server runs both in one implicit transaction (the
    extended protocol's, which Sync commits) and the settings hold for the statement only.
    ``BEGIN``, a statement and ``COMMIT`` would wait three times. An error anywhere makes the
    server skip to the Sync and roll back; the statement's context (pg8000's) is returned."""
    if conn._in_transaction:
        raise pg8000.dbapi.InterfaceError("read_once runs outside a transaction")
    statement, values = _converted(operation, tuple(args))
    conn.send_PARSE(b"\x00", _set_configs(settings), ())
    conn._send_message(b"B", b"\x00\x00" + _H.pack(0) + _H.pack(0) + _H.pack(0))
    conn.send_EXECUTE()
    name = _send_cached(conn, statement, values)
    context = Context(statement)
    # The settings' one row arrives first, before the statement's description: it lands in
    # ``rows`` as an empty row, which is dropped below.
    context.rows = []
    conn._sock.flush()
    conn.handle_messages(context)
    _CACHED[conn][statement] = name
    del context.rows[0]
    return context
