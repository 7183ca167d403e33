"""Retention per data class, enforced as the daily job does it, on a fixed clock
(``colony.testing.inline.fixed_clock``), on the real PostgreSQL and GCS emulator."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest

from colony.env_values import RETENTION_MAX_DAYS
from colony.errors import ConfigError, ValidationFailed
from colony.flows.tenants import retention
from colony.ports import BlobStore
from colony.settings import Settings
from colony.testing.inline import FIXED_NOW, InlineTransport, local_deps
from tests.conftest import Gcs, PgDB
from tests.erasure_seed import dump, seed_org

DIM = 8
ALPHA, BETA = "org_alpha", "org_beta"


def _age(conn: object, table: str, where: str, days: int) -> None:
    cur = conn.cursor()  # type: ignore[attr-defined]
    cur.execute(
        f"UPDATE {table} SET created_at = %s WHERE {where}", (FIXED_NOW - timedelta(days=days),)
    )
    conn.commit()  # type: ignore[attr-defined]


@pytest.fixture
def aged(make_db: Callable[..., PgDB], gcs: Gcs) -> tuple[PgDB, BlobStore]:
    """Two orgs; in org_alpha, one row of each data class just past its period and one just
    inside it (org_alpha keeps transcripts 60 days and chat events 30; the rest at the
    deployment's limit)."""
    db = make_db(dim=DIM)
    blobs: BlobStore = gcs.store  # type: ignore[assignment]
    conn = db.owner_connection()
    for org in (ALPHA, BETA):
        seed_org(conn, blobs, org, DIM)
    cur = conn.cursor()
    cur.execute(
        "INSERT INTO org_retention (org_id, data_class, days) VALUES (%s, 'transcripts', 60)",
        (ALPHA,),
    )
    conn.commit()
    _age(conn, "recordings", f"id = '{ALPHA}_r1'", 61)
    _age(conn, "recordings", f"id = '{ALPHA}_r2'", 59)
    _age(conn, "chat_events", f"org_id = '{ALPHA}' AND seq = 1", 31)
    _age(conn, "chat_events", f"org_id = '{ALPHA}' AND seq = 2", 29)
    _age(conn, "llm_calls", f"org_id = '{ALPHA}'", RETENTION_MAX_DAYS["llm_calls"] + 1)
    _age(conn, "outbox", f"org_id = '{ALPHA}' AND contact_id = '{ALPHA}_c1'", 366)
    _age(conn, "outbox", f"org_id = '{ALPHA}' AND contact_id = '{ALPHA}_c2'", 364)
    # org_beta's rows are all old: its own run is not this test's, and must not happen here
    for table in ("recordings", "chat_events", "llm_calls", "outbox"):
        _age(conn, table, f"org_id = '{BETA}'", 1000)
    conn.close()
    return db, blobs


def _beta(db: PgDB) -> dict[str, list[str]]:
    conn = db.owner_connection()
    try:
        return dump(conn, BETA)
    finally:
        conn.close()


def test_the_daily_run_expires_exactly_what_is_past_each_period(
    aged: tuple[PgDB, BlobStore],
) -> None:
    db, blobs = aged
    before_beta = _beta(db)
    deps = local_deps(db.settings, db.app(), InlineTransport(), blobs=blobs)
    first = retention.enforce(deps, ALPHA)
    assert first["as_of"] == FIXED_NOW.isoformat()
    assert first["days"] == {
        "transcripts": 60,
        "chat_events": 30,
        "llm_calls": RETENTION_MAX_DAYS["llm_calls"],
        "outbox_bodies": RETENTION_MAX_DAYS["outbox_bodies"],
        "research": RETENTION_MAX_DAYS["research"],
    }
    assert first["expired"] == {
        "transcripts": 1,
        "chat_events": 1,
        "llm_calls": 1,
        "outbox_bodies": 1,
        "research": 0,  # the seed's pages were read today (tests/test_research_runner.py ages one)
    }
    assert blobs.names(f"transcripts/{ALPHA}/") == [f"transcripts/{ALPHA}/f2.txt"]
    conn = db.owner_connection()
    cur = conn.cursor()
    cur.execute(
        "SELECT id, transcript_uri IS NULL FROM recordings WHERE org_id = %s ORDER BY id", (ALPHA,)
    )
    assert [list(r) for r in cur.fetchall()] == [[f"{ALPHA}_r1", True], [f"{ALPHA}_r2", False]]
    cur.execute("SELECT seq FROM chat_events WHERE org_id = %s", (ALPHA,))
    assert [r[0] for r in cur.fetchall()] == [2]
    cur.execute(
        "SELECT contact_id, body FROM outbox WHERE org_id = %s ORDER BY contact_id", (ALPHA,)
    )
    assert [list(r) for r in cur.fetchall()] == [[f"{ALPHA}_c1", ""], [f"{ALPHA}_c2", "Hello"]]
    cur.execute("SELECT count(*) FROM llm_calls WHERE org_id = %s", (ALPHA,))
    assert cur.fetchone()[0] == 0
    conn.close()
    # another org is not touched by this org's run, and a second run finds nothing more
    assert _beta(db) == before_beta
    again = retention.enforce(deps, ALPHA)
    assert again["expired"] == dict.fromkeys(first["expired"], 0)


def test_a_lowered_deployment_limit_holds_an_org_to_it(aged: tuple[PgDB, BlobStore]) -> None:
    db, blobs = aged
    limits = {**RETENTION_MAX_DAYS, "chat_events": 20}
    settings = dataclasses.replace(db.settings, retention_max_days=limits)
    deps = local_deps(settings, db.app(), InlineTransport(), blobs=blobs)
    assert retention.periods(deps, ALPHA)["days"]["chat_events"] == 20  # its own 30 is over
    assert retention.enforce(deps, ALPHA)["expired"]["chat_events"] == 2
    with pytest.raises(ValidationFailed, match="limit"):
        retention.set_periods(deps, ALPHA, {"chat_events": 21})
    with pytest.raises(ValidationFailed):
        retention.set_periods(deps, ALPHA, {"chat_events": 0})
    assert retention.set_periods(deps, ALPHA, {"chat_events": 7})["days"]["chat_events"] == 7


def test_the_deployment_limits_are_read_from_the_environment() -> None:
    settings = Settings.from_env({"COLONY_RETENTION_MAX_DAYS": "chat_events=14, llm_calls=30"})
    assert settings.retention_max_days == {
        **RETENTION_MAX_DAYS,
        "chat_events": 14,
        "llm_calls": 30,
    }
    for bad in ("emails=3", "chat_events=0", "chat_events=ten", "chat_events=4000"):
        with pytest.raises(ConfigError, match="COLONY_RETENTION_MAX_DAYS"):
            Settings.from_env({"COLONY_RETENTION_MAX_DAYS": bad})
