"""The connection pool (``colony.store.Database``) on the real embedded PostgreSQL: connections
the server ended are replaced before a request sees them, old ones are recycled, the number
open is bounded, one Cloud SQL Connector serves the whole process, and a transaction's
statements take one round trip each (``colony.store.wire``), counted through a proxy."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, ClassVar

import pg8000.dbapi
import pytest

from colony.errors import DatabaseError, ValidationFailed
from colony.local.db import connect_factory
from colony.registry.functions import FUNCTIONS, NESTED_TRANSACTION_SPARE, pool_size
from colony.runtime.deps import build_deps
from colony.settings import Settings
from colony.store import Database, fetch_all, fetch_one, fetch_value, wire
from colony.store import db as db_module
from colony.store.db import Connect, parse_dsn
from colony.testing.inline import InlineTransport
from colony.testing.pgproxy import CountingProxy
from tests.conftest import APP_ROLE, PgDB

ORG = "org_pool"
BACKEND = "SELECT pg_backend_pid()"


class Clock:
    """The pool's clock (connection ages), moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def backend(db: Database, org: str | None = ORG) -> int:
    """One request's worth of work: an org-scoped transaction; returns the backend serving it."""
    with db.transaction(org) as cur:
        assert fetch_value(cur, "SELECT current_setting('app.org_id', true)") == org
        pid: int = fetch_value(cur, BACKEND)
    return pid


def app_backends(testdb: PgDB) -> set[int]:
    owner = testdb.owner_connection()
    try:
        cur = owner.cursor()
        cur.execute(
            "SELECT pid FROM pg_stat_activity WHERE usename = %s AND datname = current_database()",
            (APP_ROLE,),
        )
        return {row[0] for row in cur.fetchall()}
    finally:
        owner.close()


def terminate_app_backends(testdb: PgDB) -> set[int]:
    """``pg_terminate_backend`` every session of the application role, as the owner; returns
    once each backend has exited (the timeout argument makes the call wait for that)."""
    owner = testdb.owner_connection()
    try:
        cur = owner.cursor()
        cur.execute(
            "SELECT pid, pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
            " WHERE usename = %s AND datname = current_database()",
            (APP_ROLE,),
        )
        rows = cur.fetchall()
        owner.commit()
    finally:
        owner.close()
    assert rows and all(ended for _, ended in rows), rows
    return {pid for pid, _ in rows}


def counting(connect: Connect) -> tuple[Connect, list[int]]:
    opened: list[int] = []

    def wrapped() -> pg8000.dbapi.Connection:
        conn = connect()
        opened.append(1)
        return conn

    return wrapped, opened


# ----------------------------------------------------------------------------- liveness


def test_a_request_after_every_backend_was_terminated_succeeds(testdb: PgDB) -> None:
    """The server ends the pool's idle connections between two requests (a restart, a
    failover, an admin): the next request gets a fresh connection, not an error."""
    db = testdb.app()
    first = backend(db)
    assert terminate_app_backends(testdb) == {first}
    second = backend(db)
    assert second != first
    assert app_backends(testdb) == {second}
    assert backend(db) == second  # and the fresh one is pooled as usual


def test_every_pooled_connection_is_replaced_after_a_mass_termination(testdb: PgDB) -> None:
    db = Database(connect_factory(testdb.settings, "app"), pool_size=3)
    testdb.opened.append(db)
    hold = threading.Barrier(3)

    def busy() -> None:
        with db.transaction(ORG):
            hold.wait(10)  # all three open at once, so the pool keeps three idle

    workers = [threading.Thread(target=busy) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    old = terminate_app_backends(testdb)
    assert len(old) == 3
    fresh = [backend(db) for _ in range(3)]
    assert not set(fresh) & old


def test_an_idle_connection_is_pinged_so_a_silent_drop_is_replaced(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection the network dropped without a word shows nothing on its socket: only the
    ping of a connection idle for ``idle_check`` seconds finds it dead."""
    clock = Clock()
    db = Database(connect_factory(testdb.settings, "app"), idle_check=30, clock=clock)
    testdb.opened.append(db)
    first = backend(db)
    monkeypatch.setattr(db_module, "_has_input", lambda conn: False)  # the silent network
    terminate_app_backends(testdb)
    clock.now += 30
    second = backend(db)
    assert second != first


def test_without_the_ping_a_silently_dropped_connection_fails_the_request(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control for the test above: idle for less than ``idle_check``, with nothing on the
    socket, a connection is handed out unchecked (no round trip), and a dead one fails."""
    clock = Clock()
    db = Database(connect_factory(testdb.settings, "app"), idle_check=30, clock=clock)
    testdb.opened.append(db)
    backend(db)
    monkeypatch.setattr(db_module, "_has_input", lambda conn: False)
    terminate_app_backends(testdb)
    clock.now += 29
    with pytest.raises(DatabaseError):
        backend(db)
    backend(db)  # the broken connection was dropped, not pooled again


def test_a_healthy_idle_connection_survives_its_ping(testdb: PgDB) -> None:
    clock = Clock()
    connect, opened = counting(connect_factory(testdb.settings, "app"))
    db = Database(connect, idle_check=30, max_lifetime=1800, clock=clock)
    testdb.opened.append(db)
    first = backend(db)
    clock.now += 600
    assert backend(db) == first and len(opened) == 1


def test_connections_older_than_max_lifetime_are_recycled(testdb: PgDB) -> None:
    clock = Clock()
    connect, opened = counting(connect_factory(testdb.settings, "app"))
    db = Database(connect, idle_check=30, max_lifetime=1800, clock=clock)
    testdb.opened.append(db)
    first = backend(db)
    clock.now += 20
    assert backend(db) == first  # young and recently used: reused as it is
    clock.now += 1800
    recycled = backend(db)
    assert recycled != first and len(opened) == 2


# ----------------------------------------------------------------------------- the bound


def test_past_pool_size_a_caller_waits_then_gets_the_released_connection(testdb: PgDB) -> None:
    """Two connections at most: two requests hold them, a third waits (the pool opens no
    third connection) and, when one is released, is handed that one."""
    started = threading.Barrier(3)
    release_a, release_b = threading.Event(), threading.Event()
    c_waiting = threading.Event()
    c_thread: list[threading.Thread] = []

    def clock() -> float:
        # The pool reads its clock, under its lock, just before it waits for a connection:
        # once this is set, the release below can only happen after C is waiting.
        if c_thread and threading.current_thread() is c_thread[0]:
            c_waiting.set()
        return time.monotonic()

    connect, opened = counting(connect_factory(testdb.settings, "app"))
    db = Database(connect, pool_size=2, acquire_timeout=30, clock=clock)
    testdb.opened.append(db)
    pids: dict[str, int] = {}

    def hold(name: str, release: threading.Event) -> None:
        with db.transaction(ORG) as cur:
            pids[name] = fetch_value(cur, BACKEND)
            started.wait(10)
            assert release.wait(10)

    def third() -> None:
        pids["c"] = backend(db)

    holders = [
        threading.Thread(target=hold, args=("a", release_a)),
        threading.Thread(target=hold, args=("b", release_b)),
    ]
    for thread in holders:
        thread.start()
    started.wait(10)  # a and b both hold a connection now
    c_thread.append(threading.Thread(target=third))
    c_thread[0].start()
    assert c_waiting.wait(10)
    assert "c" not in pids and app_backends(testdb) == {pids["a"], pids["b"]}
    release_a.set()
    c_thread[0].join(10)
    assert pids["c"] == pids["a"]  # the connection a released
    assert len(opened) == 2  # never a third
    release_b.set()
    for thread in holders:
        thread.join(10)


def test_the_spare_connection_lets_every_request_nest_a_transaction(testdb: PgDB) -> None:
    """A chat turn holds its session lock while it writes events: with ``concurrency``
    requests doing that at once, the one spare connection the registry adds
    (``NESTED_TRANSACTION_SPARE``) lets each inner transaction through in turn. Without it,
    all would wait on each other."""
    concurrency = 2
    db = Database(
        connect_factory(testdb.settings, "app"),
        pool_size=concurrency + NESTED_TRANSACTION_SPARE,
        acquire_timeout=10,
    )
    testdb.opened.append(db)
    outer_held = threading.Barrier(concurrency)
    inner: list[int] = []

    def request() -> None:
        with db.transaction(ORG):
            outer_held.wait(10)  # every request holds its outer transaction now
            inner.append(backend(db))

    threads = [threading.Thread(target=request) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(inner) == concurrency


def test_the_wait_is_bounded_and_the_error_says_why(testdb: PgDB) -> None:
    db = Database(connect_factory(testdb.settings, "app"), pool_size=1, acquire_timeout=0.05)
    testdb.opened.append(db)
    with db.transaction(ORG), pytest.raises(DatabaseError, match=r"all 1 connections .* busy"):
        backend(db)
    backend(db)  # free again once the holder is done


def test_a_failed_connect_gives_its_slot_back(testdb: PgDB) -> None:
    real = connect_factory(testdb.settings, "app")
    attempts: list[int] = []

    def flaky() -> pg8000.dbapi.Connection:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("connection refused")
        return real()

    db = Database(flaky, pool_size=1, acquire_timeout=1)
    testdb.opened.append(db)
    with pytest.raises(DatabaseError, match="cannot connect"):
        backend(db)
    backend(db)  # the one slot was not leaked by the failure


# ----------------------------------------------------------------------------- sizing


@pytest.mark.parametrize("name", ["chat", "recording-intelligence", "delivery-events"])
def test_a_function_pool_is_sized_from_its_concurrency(testdb: PgDB, name: str) -> None:
    """``build_deps`` sizes the pool from the function this process serves (K_SERVICE)."""
    settings = replace(testdb.settings, function_name=name)
    deps = build_deps(settings, transport=InlineTransport())
    testdb.opened.append(deps.db)
    function = FUNCTIONS[name]
    workers = settings.recording_parallelism if function.agent == "AGT-006" else 0
    assert deps.db.pool_size == pool_size(name, settings.recording_parallelism)
    assert deps.db.pool_size == function.concurrency + workers + NESTED_TRANSACTION_SPARE
    local = build_deps(testdb.settings, transport=InlineTransport())  # no K_SERVICE
    testdb.opened.append(local.db)
    largest = max(pool_size(n, settings.recording_parallelism) for n in FUNCTIONS)
    assert local.db.pool_size == largest


# ----------------------------------------------------------------------------- Cloud SQL


class FakeConnector:
    """Stands in for ``google.cloud.sql.connector.Connector`` (which needs Google
    credentials), connecting to the embedded server instead; counts its instances."""

    made: ClassVar[list[FakeConnector]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.dsn: str = ""
        FakeConnector.made.append(self)

    def connect(self, instance: str, driver: str, **kwargs: Any) -> pg8000.dbapi.Connection:
        assert driver == "pg8000" and kwargs["user"] == APP_ROLE
        return pg8000.dbapi.connect(**parse_dsn(self.dsn))


def test_one_cloud_sql_connector_per_process(testdb: PgDB, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every factory (the pool's, the chat hub's, a second pool's) shares one Connector: each
    Connector runs a thread of its own, so one per request would leak them."""
    import google.cloud.sql.connector as connector_module

    import colony.local.cloudsql as cloudsql_module

    monkeypatch.setattr(FakeConnector, "made", [])
    monkeypatch.setattr(connector_module, "Connector", FakeConnector)
    monkeypatch.setattr(cloudsql_module, "_connector", None)
    settings = Settings.from_env(
        {
            "COLONY_DB_MODE": "cloudsql",
            "COLONY_CLOUDSQL_INSTANCE": "p:r:i",
            "COLONY_DB_PASSWORD": "not-used-by-the-fake",
        }
    )
    factories: list[Callable[[], pg8000.dbapi.Connection]] = [
        connect_factory(settings, "app") for _ in range(3)
    ]
    assert FakeConnector.made == []  # built on first connect, not with the factory
    pools = [Database(factory, pool_size=1) for factory in factories]
    testdb.opened.extend(pools)
    connector = cloudsql_module._cloudsql_connector()
    connector.dsn = testdb.dsn(APP_ROLE)
    for pool in pools:
        backend(pool)
    extra = pools[0].connect()  # a dedicated connection (the chat hub's LISTEN) too
    extra.close()
    assert FakeConnector.made == [connector]
    assert connector.kwargs == {"refresh_strategy": "lazy"}


# ----------------------------------------------------------------------------- the wire


@pytest.fixture
def counted(testdb: PgDB) -> Iterator[tuple[Database, CountingProxy]]:
    """A one-connection pool whose connection passes through a round-trip counting proxy,
    opened before the test counts anything."""
    proxy = CountingProxy.in_front_of(testdb.dsn(APP_ROLE))
    db = Database(lambda: pg8000.dbapi.connect(**parse_dsn(proxy.dsn)), pool_size=1)
    testdb.opened.append(db)
    with db.transaction(None):
        pass
    return db, proxy


def test_begin_and_scope_take_one_round_trip_each_statement_one_and_commit_one(
    counted: tuple[Database, CountingProxy],
) -> None:
    db, proxy = counted
    before = proxy.round_trips
    with db.transaction(ORG, settings={"hnsw.ef_search": "80"}) as cur:
        scope = "SELECT current_setting('app.org_id', true) || %s AS org,"
        row = fetch_one(cur, scope + " current_setting('hnsw.ef_search', true) AS ef", ("!",))
        assert row == {"org": ORG + "!", "ef": "80"}
        assert fetch_value(cur, "SELECT %s::int + 1", (41,)) == 42
        cur.execute("CREATE TEMP TABLE wire_t (n int) ON COMMIT DROP")
        cur.execute("INSERT INTO wire_t SELECT generate_series(1, %s)", (3,))
        assert cur.rowcount == 3
    assert proxy.round_trips - before == 1 + 4 + 1


def test_a_prepared_statement_is_parsed_once_per_connection_and_outlives_a_rollback(
    counted: tuple[Database, CountingProxy],
) -> None:
    db, proxy = counted
    sql = "SELECT %s::int * 2 AS n"
    before = proxy.round_trips
    with pytest.raises(RuntimeError), db.transaction(ORG) as cur:
        assert fetch_one(cur, sql, (2,), prepare=True) == {"n": 4}
        raise RuntimeError("roll back")
    assert proxy.round_trips - before == 1 + 2 + 1  # begin, prepare + execute, rollback
    before = proxy.round_trips
    with db.transaction(ORG) as cur:
        assert fetch_all(cur, sql, (5,), prepare=True) == [{"n": 10}]
    assert proxy.round_trips - before == 1 + 1 + 1  # executed by name: one round trip


def test_a_cached_statement_takes_one_round_trip_hit_or_miss_and_the_cache_is_bounded(
    counted: tuple[Database, CountingProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, proxy = counted
    monkeypatch.setattr(wire, "CACHED_PER_CONNECTION", 2)
    texts = [f"SELECT %s::int + {n} AS n" for n in range(4)]
    named = "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'colony_cached_%%'"
    before = proxy.round_trips
    with db.transaction(ORG) as cur:
        assert fetch_all(cur, texts[0], (1,), cache=True) == [{"n": 1}]  # parsed: a miss
        assert fetch_all(cur, texts[0], (2,), cache=True) == [{"n": 2}]  # by name: a hit
    assert proxy.round_trips - before == 1 + 1 + 1 + 1
    with db.transaction(ORG) as cur:
        for n, text in enumerate(texts):
            assert fetch_value(cur, text.replace("%s", str(10)) + " -- plain") == 10 + n
            assert fetch_all(cur, text, (10,), cache=True) == [{"n": 10 + n}]
        # the oldest were closed on the server as newer ones came: two live at most
        assert fetch_value(cur, named) == 2
    with pytest.raises(DatabaseError), db.transaction(ORG) as cur:
        fetch_all(cur, "SELECT %s::int FROM no_such_table", (1,), cache=True)
    # a text that failed to parse is not remembered (it would name no statement), and the
    # connection's cached ones still serve
    assert not any("no_such_table" in t for kept in wire._CACHED.values() for t in kept)
    with db.transaction(ORG) as cur:
        assert fetch_all(cur, texts[3], (1,), cache=True) == [{"n": 4}]
        assert fetch_value(cur, named) == 1  # the oldest made room for the failed one


def test_a_read_is_one_round_trip_in_one_transaction_with_its_scope_and_settings(
    counted: tuple[Database, CountingProxy],
) -> None:
    """``Database.read``: the scope and the statement before one Sync, so one round trip;
    the settings hold for the statement (one transaction) and are gone after it."""
    db, proxy = counted
    sql = (
        "SELECT current_setting('app.org_id', true) AS org,"
        " current_setting('hnsw.ef_search', true) AS ef, %s::int + 1 AS n,"
        " txid_current_if_assigned() IS NULL AS read_only"
    )
    for n in (1, 2):  # a miss (parsed) and then a hit (by name)
        before = proxy.round_trips
        rows = db.read(ORG, sql, (n,), settings={"hnsw.ef_search": "77"})
        assert proxy.round_trips - before == 1
        assert rows == [{"org": ORG, "ef": "77", "n": n + 1, "read_only": True}]
    rows = db.read(ORG, "SELECT generate_series(1, %s) AS i", (3,))
    assert rows == [{"i": 1}, {"i": 2}, {"i": 3}]  # no row of the scope's leaks in
    assert db.read(ORG, "SELECT 1 AS one WHERE %s", (False,)) == []
    with db.transaction(None) as cur:  # the same (only) connection: nothing carried over
        assert fetch_value(cur, "SELECT current_setting('app.org_id', true)") in (None, "")
        assert fetch_value(cur, "SELECT current_setting('hnsw.ef_search', true)") != "77"


def test_a_failed_read_raises_and_leaves_the_connection_in_step(
    counted: tuple[Database, CountingProxy],
) -> None:
    db, _ = counted
    with pytest.raises(ValidationFailed, match="division by zero"):
        db.read(ORG, "SELECT 1 / %s::int AS n", (0,))
    with pytest.raises(ValidationFailed, match="statement_timeout"):  # the statement is skipped
        db.read(ORG, "SELECT %s::int AS n", (1,), settings={"statement_timeout": "lots"})
    assert db.read(ORG, "SELECT 1 / %s::int AS n", (1,)) == [{"n": 1}]
    with db.transaction(ORG) as cur:
        assert fetch_value(cur, "SELECT %s::int", (5,)) == 5
    with pytest.raises(ValidationFailed, match="scope"):
        db.read(None, "SELECT 1")


def test_a_vector_param_is_bound_in_binary_and_means_the_same_as_its_text(
    testdb: PgDB,
) -> None:
    from colony.vectors import VectorParam, sql_text

    db = testdb.app()
    vector = [0.5, -1.25, 3.0e-7, 1.0]
    param = VectorParam(vector)
    assert str(param) == sql_text(vector)  # what a plain cursor sends instead
    sql = "SELECT %s::vector::text AS v, %s::vector <=> %s::vector AS d"
    [row] = db.read(ORG, sql, (param, param, sql_text(vector)))
    assert row["v"] == "[0.5,-1.25,3e-07,1]" and row["d"] == 0.0
    with db.transaction(ORG) as cur:  # the cursor's one-round-trip execute binds it too
        assert fetch_value(cur, "SELECT %s::vector = %s::vector", (param, str(param))) is True


def test_a_failed_statement_rolls_back_and_the_connection_serves_the_next(testdb: PgDB) -> None:
    db = Database(connect_factory(testdb.settings, "app"), pool_size=1)
    testdb.opened.append(db)
    for prepare in (False, True):
        with pytest.raises(ValidationFailed, match="division by zero"), db.transaction(ORG) as cur:
            fetch_value(cur, "SELECT %s::int", (1,))
            fetch_one(cur, "SELECT 1 / %s::int AS n", (0,), prepare=prepare)
        with db.transaction(ORG) as cur:
            assert fetch_one(cur, "SELECT 1 / %s::int AS n", (1,), prepare=prepare) == {"n": 1}


@pytest.mark.parametrize("org", ["o'brien", "back\\slash", "'; SELECT 1; --", "\\'x\\", "ünï"])
def test_an_org_id_reaches_the_server_verbatim_and_scopes_rls_to_itself(
    testdb: PgDB, org: str
) -> None:
    """The scope is sent as a string literal (simple-query protocol): quotes, backslashes and
    SQL in an org id are data, and row-level security sees exactly that org."""
    db = testdb.app()
    with db.transaction(org) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'x')", (org,))
    with db.transaction(org) as cur:
        assert fetch_value(cur, "SELECT current_setting('app.org_id', true)") == org
        assert [r["id"] for r in fetch_all(cur, "SELECT id FROM organizations")] == [org]
    with db.transaction("org_other") as cur:
        assert fetch_all(cur, "SELECT id FROM organizations") == []


def test_a_nul_in_an_org_id_is_refused_before_a_connection_is_taken(testdb: PgDB) -> None:
    db = Database(connect_factory(testdb.settings, "app"), pool_size=1)
    testdb.opened.append(db)
    with pytest.raises(ValidationFailed, match="NUL"), db.transaction("org\x00x"):
        pass
    assert backend(db) > 0  # the pool is untouched
