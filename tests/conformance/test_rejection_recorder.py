"""The ``RejectionRecorder`` port's conformance suite: the in-memory fake and the database.

- ``memory``: ``colony.runtime.edge.MemoryRejections``, which the edge and flow tests read;
- ``db``: ``colony.store.rejections.DbRejections`` writing ``rejected_deliveries`` as the
  application role, on the real embedded PostgreSQL (a fresh migrated database per test),
  read back as the owner (the application role may insert but not select).

The contract (``colony.ports.RejectionRecorder``): every record is kept, in order, as
``Rejection.of`` normalises it: ids clipped to ``MAX_REJECTION_ID`` characters, an empty id
kept as None, the reason clipped to ``MAX_REJECTION_REASON``; no org is needed (a rejected
delivery's org is unverified).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from colony.ports import MAX_REJECTION_ID, MAX_REJECTION_REASON, Rejection, RejectionRecorder
from colony.runtime.edge import MemoryRejections
from colony.store.db import fetch_all
from colony.store.rejections import DbRejections
from tests.conformance.exercise import exercised
from tests.conftest import PgDB


@dataclass
class Harness:
    recorder: RejectionRecorder
    recorded: Callable[[], list[Rejection]]


@pytest.fixture(params=["memory", "db"])
def harness(request: pytest.FixtureRequest) -> Harness:
    if request.param == "memory":
        memory = MemoryRejections()
        return Harness(memory, lambda: list(memory.rejections))
    testdb: PgDB = request.getfixturevalue("testdb")
    recorder = DbRejections(testdb.app())

    def recorded() -> list[Rejection]:
        owner = testdb.owner_connection()
        try:
            rows = fetch_all(
                owner.cursor(),
                "SELECT function, event_id, claimed_org_id, reason FROM rejected_deliveries"
                " ORDER BY id",
            )
        finally:
            owner.close()
        return [Rejection(**row) for row in rows]

    return Harness(recorder, recorded)


def test_it_is_a_rejection_recorder(harness: Harness) -> None:
    with exercised(RejectionRecorder, harness.recorder) as recorder:
        assert recorder.record("enrichment", "m-1", "org_a", "malformed event: kind") is None
    assert harness.recorded() == [Rejection("enrichment", "m-1", "org_a", "malformed event: kind")]


def test_every_rejection_is_kept_in_order(harness: Harness) -> None:
    harness.recorder.record("enrichment", "m-1", "org_a", "malformed event: kind")
    harness.recorder.record("enrichment", "m-1", "org_a", "malformed event: kind")  # a redelivery
    harness.recorder.record("notion-webhook", None, None, "bad signature")
    assert harness.recorded() == [
        Rejection("enrichment", "m-1", "org_a", "malformed event: kind"),
        Rejection("enrichment", "m-1", "org_a", "malformed event: kind"),
        Rejection("notion-webhook", None, None, "bad signature"),
    ]


def test_an_org_that_does_not_exist_is_recorded_as_claimed(harness: Harness) -> None:
    harness.recorder.record("qualification", "m-2", "org_nobody_knows", "org mismatch")
    assert harness.recorded() == [
        Rejection("qualification", "m-2", "org_nobody_knows", "org mismatch")
    ]


def test_long_ids_and_reasons_are_clipped_and_empty_ids_are_none(harness: Harness) -> None:
    long_id, long_org, long_reason = "e" * 300, "o" * 250, "r" * 900
    harness.recorder.record("campaign", long_id, long_org, long_reason)
    harness.recorder.record("campaign", "", "", "empty ids")
    assert harness.recorded() == [
        Rejection(
            "campaign",
            long_id[:MAX_REJECTION_ID],
            long_org[:MAX_REJECTION_ID],
            long_reason[:MAX_REJECTION_REASON],
        ),
        Rejection("campaign", None, None, "empty ids"),
    ]
