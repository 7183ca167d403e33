"""Durable steps: memoised outputs, effects once, concurrent duplicates, leases."""

from __future__ import annotations

import threading

import pytest

from colony.runtime.steps import StepBusy, step, stored
from colony.store import fetch_all
from tests.conftest import PgDB

ORG = "org_steps"


@pytest.fixture
def db(testdb: PgDB):
    database = testdb.app()
    with database.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'x')", (ORG,))
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS effects (n int)")
    return database


def effects(db) -> int:
    with db.transaction(ORG) as cur:
        return len(fetch_all(cur, "SELECT * FROM llm_calls"))


def record_effect(cur, output) -> None:
    cur.execute(
        "INSERT INTO llm_calls (org_id, agent_id, model, tokens_in, tokens_out)"
        " VALUES (%s, 'AGT-004', 'm', %s, 0)",
        (ORG, output["n"]),
    )


def test_a_finished_step_is_never_recomputed_and_its_effects_happen_once(db) -> None:
    computed = []

    def compute():
        computed.append(1)
        return {"n": 7}

    assert step(db, ORG, "run-1", "qualify:c1", compute, record_effect) == {"n": 7}
    assert step(db, ORG, "run-1", "qualify:c1", compute, record_effect) == {"n": 7}
    assert len(computed) == 1 and effects(db) == 1
    assert stored(db, ORG, "run-1", "qualify:c1") == {"n": 7}
    assert stored(db, ORG, "run-2", "qualify:c1") is None  # keyed by run


def test_a_concurrent_duplicate_waits_instead_of_repeating_the_work(db) -> None:
    started, release = threading.Event(), threading.Event()
    calls = []

    def slow():
        calls.append(1)
        started.set()
        assert release.wait(10)
        return {"n": 1}

    first = threading.Thread(target=lambda: step(db, ORG, "run-1", "k", slow, record_effect))
    first.start()
    assert started.wait(10)
    with pytest.raises(StepBusy):  # the duplicate delivery is told to come back later
        step(db, ORG, "run-1", "k", slow, record_effect)
    release.set()
    first.join(10)
    assert step(db, ORG, "run-1", "k", slow, record_effect) == {"n": 1}  # the redelivery
    assert len(calls) == 1 and effects(db) == 1


def test_a_failed_compute_releases_its_claim(db) -> None:
    def boom():
        raise RuntimeError("provider down")

    with pytest.raises(RuntimeError):
        step(db, ORG, "run-1", "k", boom)
    assert step(db, ORG, "run-1", "k", lambda: {"n": 2}, record_effect) == {"n": 2}
    assert effects(db) == 1


def test_an_expired_lease_is_taken_over(db) -> None:
    started, release = threading.Event(), threading.Event()

    def stuck():
        started.set()
        assert release.wait(10)
        return {"n": 1}

    outcome = []
    holder = threading.Thread(
        target=lambda: outcome.append(
            step(db, ORG, "run-1", "k", stuck, record_effect, lease_seconds=0)
        )
    )
    holder.start()
    assert started.wait(10)
    # the first claimant's lease (0 s) has lapsed: a redelivery takes the step over
    assert step(db, ORG, "run-1", "k", lambda: {"n": 3}, record_effect) == {"n": 3}
    release.set()
    holder.join(10)
    # the stale claimant finishes, finds the step done by another: it gets that output and
    # writes no effect of its own
    assert outcome == [{"n": 3}]
    assert effects(db) == 1 and stored(db, ORG, "run-1", "k") == {"n": 3}


def test_effects_that_fail_free_the_step_for_the_redelivery(db) -> None:
    def failing_apply(cur, output):
        raise RuntimeError("constraint broke")

    with pytest.raises(RuntimeError):
        step(db, ORG, "run-1", "k", lambda: {"n": 1}, failing_apply)
    # not blocked by a stale lease: the redelivery runs it and applies the effects
    assert step(db, ORG, "run-1", "k", lambda: {"n": 4}, record_effect) == {"n": 4}
    assert effects(db) == 1
