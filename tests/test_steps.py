"""Durable steps: memoised outputs, effects once, concurrent duplicates, leases; and the
``run_steps`` repository's claim-or-read statement underneath."""

from __future__ import annotations

import threading

import pytest

from colony.deadline import WRAP_UP_SECONDS, model_window
from colony.runtime.steps import (
    INVOCATION_SLACK,
    LEASE_SECONDS,
    StepBusy,
    step,
    stored,
)
from colony.store import fetch_all
from colony.store import steps as run_steps
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


def test_one_statement_claims_a_step_or_says_it_is_done_or_busy(db) -> None:
    with db.transaction(ORG) as cur:
        assert run_steps.claim_or_stored(cur, ORG, "run-1", "k", "a", 300) == ("claimed", None)
        assert run_steps.claim_or_stored(cur, ORG, "run-1", "k", "b", 300) == ("busy", None)
        assert run_steps.finish(cur, "run-1", "k", "b", {"n": 1}) is False  # not b's claim
        assert run_steps.finish(cur, "run-1", "k", "a", {"n": 1}) is True
        assert run_steps.claim_or_stored(cur, ORG, "run-1", "k", "c", 300) == ("done", {"n": 1})
        assert run_steps.get(cur, "run-1", "k") == {"status": "done", "output": {"n": 1}}
    with db.transaction(ORG) as cur:
        assert run_steps.claim_or_stored(cur, ORG, "run-1", "j", "a", 0) == ("claimed", None)
    with db.transaction(ORG) as cur:  # a lapsed lease is taken over by the next claimant
        assert run_steps.claim_or_stored(cur, ORG, "run-1", "j", "b", 300) == ("claimed", None)
        assert run_steps.finish(cur, "run-1", "j", "a", {"n": 2}) is False


def test_replaying_a_done_step_neither_locks_nor_waits_for_its_row(db, testdb: PgDB) -> None:
    """The claim-or-read statement reads a done step first and then inserts nothing, so a
    replay never contends for the row (an ``INSERT ... ON CONFLICT`` would lock it)."""
    assert step(db, ORG, "run-1", "k", lambda: {"n": 5}) == {"n": 5}
    holder = testdb.owner_connection()
    try:
        cur = holder.cursor()
        cur.execute("SELECT set_config('app.org_id', %s, false)", (ORG,))
        cur.execute("SELECT 1 FROM run_steps WHERE run_id = 'run-1' FOR UPDATE")
        assert cur.fetchall(), "the row is locked by another transaction"
        replayed: list[object] = []

        def never():
            raise AssertionError("a done step was computed again")

        replay = threading.Thread(
            target=lambda: replayed.append(step(db, ORG, "run-1", "k", never))
        )
        replay.start()
        replay.join(10)
        assert replayed == [{"n": 5}]
    finally:
        holder.rollback()
        holder.close()


def _lease_left(db, run_id: str) -> float:
    with db.transaction(ORG) as cur:
        (row,) = fetch_all(
            cur,
            "SELECT extract(epoch FROM lease_until - now())::float8 AS s FROM run_steps"
            " WHERE run_id = %s",
            (run_id,),
        )
    return float(row["s"])


def test_a_step_in_a_function_is_leased_until_just_after_its_invocation_ends(db) -> None:
    """Found by the chaos soak: a holder killed mid-step, or whose release a database restart
    swallowed, kept the step ten minutes whatever its function's timeout. Within an
    invocation the lease now ends just after the invocation must have (its model window, the
    wrap-up after it and a slack); outside one it is still ``LEASE_SECONDS``."""
    seen: dict[str, float] = {}

    def compute(label: str, run_id: str) -> dict[str, str]:
        seen[label] = _lease_left(db, run_id)
        return {"ok": label}

    with model_window(100.0):
        step(db, ORG, "run-lease-fn", "k", lambda: compute("fn", "run-lease-fn"))
    step(db, ORG, "run-lease-tool", "k", lambda: compute("tool", "run-lease-tool"))
    expected = 100 + WRAP_UP_SECONDS + INVOCATION_SLACK
    assert expected - 5 <= seen["fn"] <= expected + 1
    assert LEASE_SECONDS - 5 <= seen["tool"] <= LEASE_SECONDS + 1
