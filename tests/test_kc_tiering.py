"""Knowledge Core tiering on the real PostgreSQL: the migration to a partitioned ``kc_chunks``,
an org's online move to its own partition (while it is read and written), and its limits."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from colony.errors import DatabaseError
from colony.flows.knowledge import kc_tiering
from colony.knowledge import KnowledgeStore, tiering
from colony.knowledge.bulk import bulk_load
from colony.knowledge.indexes import index_name, partition_name
from colony.knowledge.store import SEARCH_SETTINGS, ChunkIn, retrieve_sql
from colony.registry import DOMAINS
from colony.registry.functions import KC_TIER_QUEUE
from colony.store import Database, migrate
from colony.store.db import fetch_all, fetch_value
from colony.testing.fakes import CountingEmbedder
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.vectors import clustered_corpus
from colony.vectors import sql_text
from tests.conftest import PgDB, wait_for

DIM, K = 16, 5
EVEN = {d: 1 / len(DOMAINS) for d in DOMAINS}
ALPHA, BETA = "org_0", "org_1"


@dataclass
class Kc:
    testdb: PgDB
    db: Database
    store: KnowledgeStore
    model: str
    queries: Any
    rows: dict[str, int] = field(default_factory=dict)

    def owner_value(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        def run(conn: Any) -> Any:
            value = fetch_value(conn.cursor(), sql, params)
            conn.commit()
            return value

        return self.testdb.as_owner(run)

    def shared_rows(self, org: str) -> int:
        return int(
            self.owner_value("SELECT count(*) FROM kc_chunks_shared WHERE org_id = %s", (org,))
        )

    def own_rows(self, org: str) -> int:
        return int(self.owner_value(f"SELECT count(*) FROM {partition_name(org)}"))


@pytest.fixture
def kc(make_db: Callable[..., PgDB]) -> Kc:
    """Two shared orgs of ~600 chunks, ~60 per domain, loaded as a bulk import."""
    testdb = make_db(dim=DIM)
    corpus = clustered_corpus(1_200, DIM, orgs=2, clusters=20, weights=EVEN, seed=9)
    owner = testdb.owner_connection()
    for org in (ALPHA, BETA):
        owner.cursor().execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    owner.commit()
    bulk_load(owner, corpus.chunks())
    owner.close()
    db = testdb.app()
    store = KnowledgeStore(db, CountingEmbedder(dim=DIM, model=corpus.model))
    rows = {org: int((corpus.orgs == org).sum()) for org in (ALPHA, BETA)}
    return Kc(testdb, db, store, corpus.model, corpus.queries(8, seed=4), rows)


def _full(kc: Kc, org: str, q: Any, domains: tuple[str, ...] = ("KC-01", "KC-05", "KC-10")) -> bool:
    hits = kc.store.retrieve(org, q, domains, K, model=kc.model)
    return all(len(hits[d]) == K for d in domains)


def test_the_partition_name_is_the_same_in_python_and_sql(kc: Kc) -> None:
    for org in (ALPHA, "org_2abcXYZ", "a.b:c-d_e"):
        assert kc.owner_value("SELECT colony_kc_partition(%s)", (org,)) == partition_name(org)


def test_a_promoted_org_is_answered_by_its_own_graphs_and_the_other_stays_shared(kc: Kc) -> None:
    done = tiering.promote(kc.db, ALPHA)
    assert done.moved and done.copied == done.caught_up == kc.rows[ALPHA]
    assert kc.shared_rows(ALPHA) == 0 and kc.own_rows(ALPHA) == kc.rows[ALPHA]
    assert kc.shared_rows(BETA) == kc.rows[BETA]
    assert not tiering.promote(kc.db, ALPHA).moved  # idempotent
    with kc.db.transaction(ALPHA, settings=SEARCH_SETTINGS) as cur:
        plan = fetch_all(
            cur,
            "EXPLAIN " + retrieve_sql(ALPHA, ["KC-03"]),
            [sql_text(kc.queries[0]), kc.model, K],
        )
    text = " ".join(r["QUERY PLAN"] for r in plan)
    # pruned at plan time: only the org's own partition, through the domain's graph
    assert index_name(ALPHA, "KC-03") in text and "kc_chunks_shared" not in text
    with kc.db.transaction(BETA, settings=SEARCH_SETTINGS) as cur:
        plan = fetch_all(
            cur, "EXPLAIN " + retrieve_sql(BETA, ["KC-03"]), [sql_text(kc.queries[0]), kc.model, K]
        )
    text = " ".join(r["QUERY PLAN"] for r in plan)
    assert "kc_chunks_shared" in text and partition_name(ALPHA) not in text
    for q in kc.queries:
        assert _full(kc, ALPHA, q) and _full(kc, BETA, q)
    # the moved org's partition has KC-08's index by angle (migration 0036), copied by the
    # move and adopted by the attach, as the shared partition has it
    with kc.db.transaction(ALPHA) as cur:
        angle = fetch_all(
            cur,
            "SELECT tablename FROM pg_indexes WHERE indexdef LIKE %s ORDER BY tablename",
            ["%(org_id, ((tags ->> 'angle'::text)))%"],
        )
    assert {r["tablename"] for r in angle} >= {partition_name(ALPHA), "kc_chunks_shared"}


def test_a_kept_retrieval_statement_is_planned_once_and_again_when_its_org_moves(kc: Kc) -> None:
    """Retrieval statements are kept per connection (colony.store.wire.cached) with one
    generic plan. Moving the org attaches its partition, and PostgreSQL must re-plan the kept
    statement onto it: a stale plan would read the shared partition, where the org's rows no
    longer are, come back short, and need the exact fallback (a second statement)."""
    domains = ("KC-01", "KC-05", "KC-10")
    kept = (
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
        " WHERE name LIKE 'colony_cached_%%'"
    )

    def truth(q: Any) -> dict[str, set[int]]:
        params: list[Any] = [sql_text(q)]
        for _ in domains:
            params += [kc.model, K]
        with kc.db.transaction(ALPHA) as cur:
            rows = fetch_all(cur, retrieve_sql(ALPHA, domains, exact=True), params)
        return {d: {r["id"] for r in rows if r["domain"] == d} for d in domains}

    def answer(q: Any) -> dict[str, set[int]]:
        hits = kc.store.retrieve(ALPHA, q, domains, K, model=kc.model)
        return {d: {h.id for h in hits[d]} for d in domains}

    for q in kc.queries[:3]:
        assert answer(q) == truth(q)  # shared: exact either way
    with kc.db.transaction(ALPHA) as cur:  # the pool hands back the one connection it used
        assert fetch_all(cur, kept) == [{"generic_plans": 3, "custom_plans": 0}]
    assert tiering.promote(kc.db, ALPHA).moved
    found = expected = 0
    for q in kc.queries[3:]:
        got, want = answer(q), truth(q)
        assert all(len(got[d]) == K for d in domains)
        found += sum(len(got[d] & want[d]) for d in domains)
        expected += sum(len(want[d]) for d in domains)
    assert found / expected >= 0.95  # the graphs' answer, not an exact one
    with kc.db.transaction(ALPHA) as cur:
        assert fetch_all(cur, kept) == [
            {"generic_plans": 3 + len(kc.queries[3:]), "custom_plans": 0}
        ]


def test_an_erased_org_is_never_given_a_partition(kc: Kc) -> None:
    """A tiering task retried after the org's erasure finds nothing to move."""
    assert not tiering.promote(kc.db, "org_gone").moved
    assert kc.owner_value("SELECT to_regclass(%s)", (partition_name("org_gone"),)) is None
    # nor while the org's erasure is open (it may have dropped the partition already)
    kc.owner_value(
        "INSERT INTO erasure_jobs (target_org, requested_by) VALUES (%s, 'admin') RETURNING id",
        (ALPHA,),
    )
    assert not tiering.promote(kc.db, ALPHA).moved
    assert kc.owner_value("SELECT to_regclass(%s)", (partition_name(ALPHA),)) is None


def test_row_level_security_holds_across_partitions(kc: Kc) -> None:
    tiering.promote(kc.db, ALPHA)
    with kc.db.transaction(BETA) as cur:
        assert fetch_value(cur, "SELECT count(*) FROM kc_chunks") == kc.rows[BETA]
        assert fetch_value(cur, "SELECT count(*) FROM kc_chunks WHERE org_id = %s", (ALPHA,)) == 0
    # the application role reaches an org's partition only through kc_chunks
    with pytest.raises(DatabaseError, match="permission denied"), kc.db.transaction(ALPHA) as cur:
        fetch_value(cur, f"SELECT count(*) FROM {partition_name(ALPHA)}")
    # and may move only the org whose scope it is in
    for step in ("SELECT colony_kc_stage(%s)", "SELECT colony_kc_cutover(%s, 10)"):
        with pytest.raises(DatabaseError, match="own scope"), kc.db.transaction(BETA) as cur:
            fetch_value(cur, step, (ALPHA,))
    with pytest.raises(DatabaseError, match="invalid org id"), kc.db.transaction(BETA) as cur:
        fetch_value(cur, "SELECT colony_kc_stage(%s)", ("x'; DROP TABLE contacts; --",))


def test_a_write_past_the_threshold_schedules_the_move_and_the_task_makes_it(
    kc: Kc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiering, "THRESHOLD", kc.rows[ALPHA] + 5)
    docs = [ChunkIn("KC-02", f"paragraph {i}") for i in range(3)]
    assert not kc.store.sync_source(ALPHA, "seed", "doc-1", docs).outgrown  # +3: not yet
    unchanged = kc.store.sync_source(ALPHA, "seed", "doc-1", docs)
    assert not unchanged.outgrown  # nothing added: not even counted
    assert kc.store.sync_source(ALPHA, "seed", "doc-2", docs).outgrown  # +6: past it
    transport = InlineTransport()
    deps = local_deps(kc.testdb.settings, kc.db, transport)
    assert kc_tiering.check(deps, ALPHA) and not kc_tiering.check(deps, BETA)
    kc_tiering.check(deps, ALPHA)  # noticed twice, queued once
    [task] = transport.tasks.values()
    assert (task.queue, task.target) == (KC_TIER_QUEUE, "data-lifecycle")
    assert json.loads(task.body) == {"task": {"kind": "kc.tier", "org_id": ALPHA}}
    assert kc_tiering.run(deps, ALPHA)["moved"] is True
    assert kc.own_rows(ALPHA) == kc.rows[ALPHA] + 6
    assert kc_tiering.run(deps, ALPHA)["moved"] is False  # a redelivered task: nothing to do
    assert not kc_tiering.check(deps, ALPHA)  # it no longer shares, so nothing is due


def _waiting_for_tier_lock(kc: Kc) -> bool:
    return bool(
        kc.owner_value(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND mode = 'ExclusiveLock'"
        )
    )


def test_the_cutover_waits_for_a_write_in_flight_and_takes_it_along(kc: Kc) -> None:
    """A write of the org that began before the cutover is in the org's new partition after it;
    reads stay full throughout."""
    release, written = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with kc.db.transaction(ALPHA) as cur:
                kc.store.sync_in(cur, ALPHA, "seed", "late", [ChunkIn("KC-04", "late words")])
                written.set()
                release.wait(60)
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=writer)
    thread.start()
    assert written.wait(60)
    outcome: list[tiering.Promotion] = []
    mover = threading.Thread(
        target=lambda: outcome.append(tiering.promote(kc.db, ALPHA, wait_ms=60_000))
    )
    mover.start()
    wait_for(lambda: _waiting_for_tier_lock(kc), what="the cutover to wait for the writer")
    assert all(_full(kc, ALPHA, q) for q in kc.queries)  # still shared, still full
    release.set()
    thread.join(60)
    mover.join(120)
    assert not errors and outcome and outcome[0].moved
    assert outcome[0].caught_up == kc.rows[ALPHA] + 1  # the copy had missed it: caught up
    assert kc.own_rows(ALPHA) == kc.rows[ALPHA] + 1 and kc.shared_rows(ALPHA) == 0
    assert all(_full(kc, ALPHA, q) for q in kc.queries)


def test_a_cutover_that_cannot_get_its_locks_leaves_everything_shared(kc: Kc) -> None:
    release, written = threading.Event(), threading.Event()

    def writer() -> None:
        with kc.db.transaction(ALPHA) as cur:
            kc.store.sync_in(cur, ALPHA, "seed", "slow", [ChunkIn("KC-04", "slow words")])
            written.set()
            release.wait(60)

    thread = threading.Thread(target=writer)
    thread.start()
    assert written.wait(60)
    try:
        with pytest.raises(DatabaseError, match="lock timeout"):
            tiering.promote(kc.db, ALPHA, wait_ms=50)
    finally:
        release.set()
        thread.join(60)
    assert kc.shared_rows(ALPHA) == kc.rows[ALPHA] + 1
    assert all(_full(kc, ALPHA, q) for q in kc.queries)
    assert tiering.promote(kc.db, ALPHA).moved  # the retry starts again from the copy
    assert kc.own_rows(ALPHA) == kc.rows[ALPHA] + 1


def test_an_org_crossing_over_while_read_and_written_never_under_returns(kc: Kc) -> None:
    """Readers and writers of both orgs run throughout the move; every retrieval is full, every
    write lands, and the org's rows end up all in its partition."""
    stop = threading.Event()
    progress = threading.Condition()
    counts: dict[str, int] = {}
    short: list[str] = []
    errors: list[BaseException] = []
    written: dict[str, int] = {ALPHA: 0, BETA: 0}

    def tick(name: str) -> None:
        with progress:
            counts[name] = counts.get(name, 0) + 1
            progress.notify_all()

    def reader(org: str) -> None:
        i = 0
        while not stop.is_set():
            try:
                if not _full(kc, org, kc.queries[i % len(kc.queries)]):
                    short.append(org)
            except BaseException as error:
                errors.append(error)
                return
            i += 1
            tick(f"read-{org}")

    def writer(org: str) -> None:
        n = 0
        while not stop.is_set():
            try:
                chunks = [
                    ChunkIn(sorted(DOMAINS)[(n + c) % 10], f"{org} doc {n} part {c}")
                    for c in range(2)
                ]
                kc.store.sync_source(org, "seed", f"live-{n}", chunks)
            except BaseException as error:
                errors.append(error)
                return
            n += 1
            written[org] = n * 2
            tick(f"write-{org}")

    names = [f"{kind}-{org}" for kind in ("read", "write") for org in (ALPHA, BETA)]

    def until_all(more: int, since: dict[str, int]) -> None:
        """Until every reader and writer did ``more`` rounds after ``since`` (or one failed)."""
        with progress:
            assert progress.wait_for(
                lambda: errors or all(counts.get(n, 0) >= since.get(n, 0) + more for n in names),
                timeout=120,
            )
        assert not errors, errors

    threads = [
        threading.Thread(target=f, args=(o,)) for f in (reader, writer) for o in (ALPHA, BETA)
    ]
    for t in threads:
        t.start()
    try:
        until_all(3, {})
        with progress:
            during = dict(counts)
        # the move runs in the data-lifecycle function: an instance (a pool) of its own, as
        # in production, not a fifth caller on the readers' and writers' four connections
        done = tiering.promote(kc.testdb.app(), ALPHA, wait_ms=30_000)
        with progress:
            after = dict(counts)
        until_all(3, after)  # and everyone went on after it
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not errors, errors
    assert done.moved and not short
    # the move overlapped the traffic: someone read or wrote while it ran
    assert any(after[n] > during[n] for n in names)
    assert kc.shared_rows(ALPHA) == 0
    assert kc.own_rows(ALPHA) == kc.rows[ALPHA] + written[ALPHA]
    assert kc.shared_rows(BETA) == kc.rows[BETA] + written[BETA]


def test_migration_0023_keeps_every_chunk_and_drops_the_old_org_indexes(
    make_db: Callable[..., PgDB], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    from colony.store.migrations import migrations

    migrate_module = importlib.import_module("colony.store.migrator")

    testdb = make_db(dim=DIM, migrated=False)
    conn = testdb.owner_connection()
    monkeypatch.setattr(migrate_module, "migrations", lambda dim: migrations(dim)[:22])
    assert migrate(conn, dim=DIM)[-1] == "0022_sequences"
    cur = conn.cursor()
    cur.execute("INSERT INTO organizations (id, name) VALUES ('org_0', 'o')")
    vector = "[" + ",".join(["0.25"] * DIM) + "]"
    for i in range(3):
        cur.execute(
            "INSERT INTO kc_chunks (org_id, domain, source, source_id, chunk_index, content,"
            " content_hash, embedding_model, embedding) VALUES ('org_0', 'KC-01', 'seed', %s, 0,"
            " 'c', 'h', 'm', %s::vector)",
            (f"s{i}", vector),
        )
    cur.execute(  # a per-(org, domain) graph as colony org provision made them
        "CREATE INDEX kc_hnsw_old_01 ON kc_chunks USING hnsw (embedding vector_cosine_ops)"
        " WHERE org_id = 'org_0' AND domain = 'KC-01'"
    )
    conn.commit()
    before = fetch_all(cur, "SELECT id, source_id, embedding::text AS e FROM kc_chunks ORDER BY id")
    conn.commit()
    monkeypatch.setattr(migrate_module, "migrations", migrations)
    assert migrate(conn, dim=DIM)[0] == "0023_kc_tiers"  # then any later ones
    after = fetch_all(
        cur, "SELECT id, source_id, embedding::text AS e FROM kc_chunks_shared ORDER BY id"
    )
    assert after == before
    assert fetch_value(cur, "SELECT relkind FROM pg_class WHERE relname = 'kc_chunks'") == "p"
    assert fetch_value(cur, "SELECT to_regclass('kc_hnsw_old_01')") is None
    cur.execute(
        "INSERT INTO kc_chunks (org_id, domain, source, source_id, chunk_index, content,"
        " content_hash, embedding_model, embedding) VALUES ('org_0', 'KC-01', 'seed', 'new', 0,"
        " 'c', 'h', 'm', %s::vector) RETURNING id",
        (vector,),
    )
    assert cur.fetchone()[0] > max(r["id"] for r in before)
    conn.commit()
    conn.close()
