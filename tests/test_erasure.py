"""Erasure of an org and of one prospect, on the real PostgreSQL (application role, RLS), the
real GCS emulator and Langfuse's trace API (a local stand-in speaking it).

"Zero references" is checked by a scan generated from the schema (``store.tenants.erasure.
references``: every text, varchar, json, jsonb and text[] column of every table, run as the
owner so nothing is hidden by RLS) and by the bucket listing; the other org's rows (every row
of every table that mentions it, as JSON) and objects are compared byte for byte before and
after.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from colony.adapters.langfuse_traces import LangfuseTraces
from colony.adapters.secrets import FileSecrets
from colony.errors import DatabaseError, NotFound
from colony.flows.tenants import erasure
from colony.knowledge.indexes import existing_org_indexes, index_name, partition_name
from colony.knowledge.tiering import promote
from colony.ports import BlobStore, org_tag
from colony.runtime.compose import lifecycle
from colony.runtime.faults import Faults, InjectedFault
from colony.store.migrations import ORG_SCOPED_TABLES
from colony.store.tenants import erasure as erasure_store
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.langfuse_server import LangfuseServer
from tests.conftest import APP_ROLE, Gcs, PgDB
from tests.erasure_seed import SEEDED, Seeded, dump, object_bytes, seed_org

DIM = 8
ALPHA, BETA = "org_alpha", "org_beta"


@dataclass
class World:
    db: PgDB
    blobs: BlobStore
    langfuse: LangfuseServer
    traces: LangfuseTraces
    alpha: Seeded
    beta: Seeded

    def deps(self, faults: Faults | None = None) -> Any:
        return local_deps(
            self.db.settings, self.db.app(), InlineTransport(), blobs=self.blobs, faults=faults
        )

    def owner_scan(self, needles: list[str]) -> dict[str, int]:
        conn = self.db.owner_connection()
        try:
            return erasure_store.references(conn.cursor(), needles)
        finally:
            conn.close()

    def org_scan(self, org: str, needles: list[str]) -> dict[str, int]:
        """The same scan inside one org's scope (the application role, under RLS)."""
        with self.db.app().transaction(org) as cur:
            return erasure_store.references(cur, needles, tables=erasure_store.scoped_tables())

    def dump(self, org: str) -> dict[str, list[str]]:
        return self.db.as_owner(lambda conn: dump(conn, org))


def _own_partition(conn: Any, org: str) -> int:
    """Relations of the org's own Knowledge Core partition left (itself and its indexes)."""
    names = existing_org_indexes(conn.cursor(), org)
    assert all(n.startswith(partition_name(org)) for n in names)
    return len(names)


@pytest.fixture
def world(make_db: Callable[..., PgDB], gcs: Gcs, no_ambient_config: None) -> Iterator[World]:
    db = make_db(dim=DIM)
    blobs: BlobStore = gcs.store  # type: ignore[assignment]
    conn = db.owner_connection()
    alpha = seed_org(conn, blobs, ALPHA, DIM)
    beta = seed_org(conn, blobs, BETA, DIM)
    conn.close()
    for org in (ALPHA, BETA):  # each in a Knowledge Core partition of its own, with its graphs
        assert promote(db.app(), org).moved
    with LangfuseServer() as langfuse:
        for org in (ALPHA, BETA):
            for n in range(3):
                langfuse.add_trace(f"{org}-trace-{n}", [org_tag(org), "AGT-004"], {"org_id": org})
        traces = LangfuseTraces(langfuse.url, langfuse.public_key, langfuse.secret_key)
        yield World(db, blobs, langfuse, traces, alpha, beta)
        traces.close()


def test_the_seed_fills_every_org_scoped_table(world: World) -> None:
    conn = world.db.owner_connection()
    counts = erasure_store.count_org_rows(conn.cursor(), ALPHA)
    conn.close()
    assert set(counts) == SEEDED == {*ORG_SCOPED_TABLES, "organizations"}
    assert all(n > 0 for n in counts.values()), counts


def test_erasing_an_org_leaves_nothing_and_the_other_org_untouched(world: World) -> None:
    before_beta, beta_objects = world.dump(BETA), object_bytes(world.blobs, BETA)
    assert world.owner_scan([ALPHA])  # the scan does find the org before
    deps = world.deps()
    job_id = erasure.request_org(deps, ALPHA, "user_admin")
    assert erasure.schedule(deps, job_id).endswith(f"erasure-{job_id}")
    done = erasure.run_job(deps, job_id, world.traces)

    report = done["report"]
    assert done["status"] == "done" and report["complete"] is True
    assert set(report["rows_left"]) == {*ORG_SCOPED_TABLES, "organizations"}
    assert not any(report["rows_left"].values())
    assert report["objects_left"] == report["indexes_left"] == report["traces_left"] == 0
    # the schema-generated scan, as the owner: no text anywhere names the org any more
    assert world.owner_scan([ALPHA]) == {}
    for prefix in ("transcripts/", "deployment-kits/", "imports/"):
        assert world.blobs.names(f"{prefix}{ALPHA}/") == []
    conn = world.db.owner_connection()
    assert existing_org_indexes(conn.cursor(), ALPHA) == []
    assert _own_partition(conn, ALPHA) == 0
    # the partition, 10 graphs, 4 btrees (one of them KC-08's by angle, migration 0036)
    assert _own_partition(conn, BETA) == 15
    assert index_name(BETA, "KC-01") in existing_org_indexes(conn.cursor(), BETA)
    conn.close()
    assert world.langfuse.trace_ids() == [f"{BETA}-trace-{n}" for n in range(3)]
    # the other org, byte for byte
    assert world.dump(BETA) == before_beta
    assert object_bytes(world.blobs, BETA) == beta_objects
    # running it again changes nothing and answers the stored report
    assert erasure.run_job(deps, job_id, world.traces)["report"] == report


def test_erasing_an_org_deletes_its_keys_and_tokens_from_the_secret_store(
    world: World, tmp_path: Path
) -> None:
    secrets = FileSecrets(tmp_path / "secrets")
    names = {
        org: (f"colony-dkim-{org}", f"colony-notion-{org}", f"colony-mailbox-{org}")
        for org in (ALPHA, BETA)
    }
    for org, held in names.items():
        for name in held:
            secrets.put(name, f"private material of {org}")
    deps = world.deps()
    job_id = erasure.request_org(deps, ALPHA, "user_admin")
    connections = erasure.OrgConnections(secrets=secrets)
    assert erasure.run_job(deps, job_id, world.traces, connections)["status"] == "done"
    for name in names[ALPHA]:
        with pytest.raises(NotFound):
            secrets.get(name)
    assert [secrets.get(name) for name in names[BETA]] == [f"private material of {BETA}"] * 3


def test_a_crash_in_any_phase_is_resumed_by_the_next_attempt(world: World) -> None:
    faults = Faults(frozenset({"erasure.after_objects", "erasure.after_rows"}))
    deps = world.deps(faults)
    job_id = erasure.request_org(deps, ALPHA, "user_admin")
    with pytest.raises(InjectedFault):
        erasure.run_job(deps, job_id, world.traces)  # objects gone, not yet marked
    assert erasure.job(deps, job_id)["phases_done"] == ["connections", "traces"]
    assert erasure.request_org(deps, ALPHA, "user_admin") == job_id  # one open job per org
    with pytest.raises(InjectedFault):
        erasure.run_job(deps, job_id, world.traces)  # rows deleted, not yet marked
    assert erasure.job(deps, job_id)["phases_done"] == [
        "connections",
        "traces",
        "objects",
        "indexes",
    ]
    # the org's row is gone, yet asking again (the CLI re-run) resumes the same job
    assert erasure.request_org(deps, ALPHA, "user_admin") == job_id
    done = erasure.run_job(deps, job_id, world.traces)
    assert done["phases_done"] == ["connections", "traces", "objects", "indexes", "rows"]
    assert done["report"]["complete"] is True
    assert world.owner_scan([ALPHA]) == {}


def test_an_unknown_org_or_contact_is_not_found_and_opens_no_job(world: World) -> None:
    deps = world.deps()
    before = world.dump(ALPHA)
    with pytest.raises(NotFound):
        erasure.request_org(deps, "org_nobody", "user_admin")
    with pytest.raises(NotFound):
        erasure.request_contact(deps, ALPHA, world.beta.dana, "user_admin")  # another org's
    assert world.dump(ALPHA) == before


def test_erasing_one_prospect_removes_them_and_everything_derived(world: World) -> None:
    alpha, before_beta = world.alpha, world.dump(BETA)
    beta_objects = object_bytes(world.blobs, BETA)
    needles = [alpha.dana, alpha.dana_email, alpha.dana_name]
    assert set(world.owner_scan(needles)) >= {
        "contacts.name",
        "chat_turns.content",
        "chat_events.data",
        "approval_items.payload",
        "daily_briefs.content",
        "dead_letters.data",
    }
    kept_contact = world.dump(alpha.other)
    deps = world.deps()
    job_id = erasure.request_contact(deps, ALPHA, alpha.dana, "user_admin")
    done = erasure.run_job(deps, job_id, world.traces)

    report = done["report"]
    assert report["complete"] is True and report["identifiers_checked"] == 3
    # id and email are this person's alone: nowhere in any table; the name is also another
    # org's prospect's (org_beta has a Dana Whitfield too): gone from this org only
    assert world.owner_scan(needles[:2]) == {}
    assert world.org_scan(ALPHA, needles) == {}
    assert world.owner_scan([alpha.dana_name])
    # their call's transcript is gone, the other call's stays
    assert world.blobs.names(f"transcripts/{ALPHA}/") == [f"transcripts/{ALPHA}/f2.txt"]
    # the stored research page naming them is gone, with its row; the about page stays
    research = world.blobs.names(f"research/{ALPHA}/")
    assert len(research) == 1 and b"Dana" not in world.blobs.get(research[0])
    conn = world.db.owner_connection()
    cur = conn.cursor()
    cur.execute("SELECT role FROM research_sources WHERE org_id = %s", (ALPHA,))
    assert [r[0] for r in cur.fetchall()] == ["about"]
    cur.execute("SELECT source_id FROM kc_chunks WHERE org_id = %s ORDER BY source_id", (ALPHA,))
    assert [r[0] for r in cur.fetchall()] == [f"{ALPHA}-kc01", f"{ALPHA}_i_kc2"]
    cur.execute("SELECT id FROM recordings WHERE org_id = %s", (ALPHA,))
    assert [r[0] for r in cur.fetchall()] == [f"{ALPHA}_r2"]
    cur.execute("SELECT contact_id FROM deals WHERE id = %s", (f"{ALPHA}_d1",))
    assert [list(r) for r in cur.fetchall()] == [[None]]  # the deal stays the org's
    cur.execute("SELECT content FROM chat_turns WHERE org_id = %s ORDER BY id", (ALPHA,))
    assert [r[0] for r in cur.fetchall()] == [
        "Draft a note to [erased] ([erased]) about the pilot",
        "Rob Kessler replied yesterday",
    ]
    conn.close()
    # the other contact's rows are as they were, and so is the other org
    assert world.dump(alpha.other) == kept_contact
    assert world.dump(BETA) == before_beta
    assert object_bytes(world.blobs, BETA) == beta_objects
    assert world.langfuse.trace_ids() == sorted(
        f"{org}-trace-{n}" for org in (ALPHA, BETA) for n in range(3)
    )


def test_a_prospect_erasure_resumes_after_a_crash(world: World) -> None:
    alpha = world.alpha
    deps = world.deps(Faults(frozenset({"erasure.after_objects"})))
    job_id = erasure.request_contact(deps, ALPHA, alpha.dana, "user_admin")
    with pytest.raises(InjectedFault):
        erasure.run_job(deps, job_id, None)
    done = erasure.run_job(deps, job_id, None)
    assert done["report"]["complete"] is True
    assert world.owner_scan([alpha.dana, alpha.dana_email]) == {}
    assert world.org_scan(ALPHA, [alpha.dana_name]) == {}


def test_the_owner_only_steps_run_only_inside_the_orgs_own_scope(world: World) -> None:
    app = world.db.app()
    for step in (erasure_store.drop_org_indexes, erasure_store.erase_rejections):
        with pytest.raises(DatabaseError, match="own scope"), app.transaction(BETA) as cur:
            step(cur, ALPHA)
    with pytest.raises(DatabaseError, match="invalid org id"), app.transaction(BETA) as cur:
        erasure_store.drop_org_indexes(cur, "x'; DROP TABLE contacts; --")
    conn = world.db.owner_connection()
    assert _own_partition(conn, ALPHA) == 15
    conn.close()
    assert world.owner_scan([ALPHA])["rejected_deliveries.claimed_org_id"] == 1


def test_the_cli_erases_a_prospect_then_the_org_and_prints_the_reports(
    world: World, gcs: Gcs, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from colony.local import cli

    for name, value in {
        **gcs.env,
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": world.db.dsn(APP_ROLE),
        "COLONY_EMBEDDING_DIM": str(DIM),
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "COLONY_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(lifecycle, "_built", {})  # no Langfuse keys: no trace archive
    assert cli.main(["org", "erase-contact", ALPHA, world.alpha.dana]) == 0
    assert json.loads(capsys.readouterr().out.split("\n", 1)[1])["complete"] is True
    assert cli.main(["org", "retention", ALPHA]) == 0
    assert json.loads(capsys.readouterr().out)["org_id"] == ALPHA
    assert cli.main(["org", "erase", ALPHA, "--requested-by", "ops"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{") :])
    assert report["complete"] is True and report["traces_checked"] is False
    assert world.owner_scan([ALPHA]) == {}
    assert cli.main(["org", "erase", ALPHA]) == 2  # erased: the org no longer exists
    assert "does not exist" in capsys.readouterr().err
