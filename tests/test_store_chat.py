"""The chat's repositories against the real PostgreSQL, as the application role: sessions and
turns (``store.chat``), the event log (``store.chat_events``), the pipeline snapshot
(``store.insights.pipeline``), a launch from the chat (``store.campaigns.campaigns``) and an item's
kind (``store.approvals.approvals``). Every read is scoped to the org: another org's rows are not
there."""

from __future__ import annotations

import datetime

import pytest

from colony.store import chat as chat_store
from colony.store import chat_events
from colony.store.approvals import approvals
from colony.store.campaigns import campaigns
from colony.store.db import Database, fetch_all, fetch_value
from colony.store.insights import pipeline
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("ENT-008")

ORG, OTHER = "org_a", "org_b"


@pytest.fixture
def db(testdb: PgDB) -> Database:
    db = testdb.app()
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    return db


def test_sessions_and_turns_are_the_orgs_own(db: Database) -> None:
    with db.transaction(ORG) as cur:
        session = chat_store.create_session(cur, ORG, "founder")
        first = chat_store.add_turn(cur, ORG, session, "t1", "user", "hello")
        call = {"id": "call-1", "name": "pipeline_snapshot", "status": "result"}
        second = chat_store.add_turn(cur, ORG, session, "t1", "tool", "{}", call)
        assert chat_store.session_exists(cur, session)
        assert chat_store.has_tool_result(cur, session, "call-1")
        assert not chat_store.has_tool_result(cur, session, "call-2")
        assert chat_store.turns(cur, session) == [
            {"id": first, "role": "user", "content": "hello", "tool_call": None, "turn_id": "t1"},
            {"id": second, "role": "tool", "content": "{}", "tool_call": call, "turn_id": "t1"},
        ]
    with db.transaction(OTHER) as cur:
        assert not chat_store.session_exists(cur, session)
        assert chat_store.turns(cur, session) == []
        chat_store.delete_turns(cur, session, [first, second])  # RLS: nothing to delete
    with db.transaction(ORG) as cur:
        chat_store.delete_turns(cur, session, [first])
        assert [r["id"] for r in chat_store.turns(cur, session)] == [second]


def test_the_session_lock_is_held_until_the_transaction_ends(db: Database) -> None:
    with db.transaction(ORG) as cur:
        session = chat_store.create_session(cur, ORG, "founder")
    key = (chat_store.LOCK_CLASS, session)
    held = "SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))"
    with db.transaction(ORG) as cur:
        chat_store.lock_session(cur, session)
        with db.transaction(ORG) as other:
            assert fetch_value(other, held, key) is False
    with db.transaction(ORG) as other:
        assert fetch_value(other, held, key) is True


def test_events_are_numbered_per_session_and_replayed_in_order(db: Database) -> None:
    with db.transaction(ORG) as cur:
        session = chat_store.create_session(cur, ORG, "founder")
        assert chat_store.session_exists(cur, session)
        assert chat_events.last_seq(cur, session) == 0
        batch = [("accepted", {"turn_id": "t1"}), ("delta", {"text": "hi", "turn_id": "t1"})]
        assert chat_events.append(cur, ORG, session, "t1", batch) == 2
        assert chat_events.append(cur, ORG, session, "t1", [("done", {"turn_id": "t1"})]) == 3
        rows = chat_events.after(cur, session, 1)
        assert chat_events.last_seq(cur, session) == 3
    assert [(r["seq"], r["type"], r["data"]) for r in rows] == [
        (2, "delta", {"text": "hi", "turn_id": "t1"}),
        (3, "done", {"turn_id": "t1"}),
    ]
    with db.transaction(ORG) as cur:
        assert [r["seq"] for r in chat_events.after(cur, session, 0, limit=2)] == [1, 2]
    with db.transaction(OTHER) as cur:  # another org's session: nothing written, nothing read
        assert chat_events.append(cur, OTHER, session, "t2", [("done", {})]) is None
        assert chat_events.after(cur, session, 0) == []
        assert chat_events.last_seq(cur, session) is None


def test_brief_on_reads_the_days_brief(db: Database) -> None:
    today = datetime.date(2026, 3, 2)
    with db.transaction(ORG) as cur:
        assert chat_store.brief_on(cur, today) is None
        cur.execute(
            "INSERT INTO daily_briefs (org_id, brief_date, content) VALUES (%s, %s, %s)",
            (ORG, today, "All quiet."),
        )
        found = chat_store.brief_on(cur, today)
        assert found is not None and found.pop("id")  # the row's id (a call's provenance)
        assert found == {"brief_date": today, "content": "All quiet.", "sections": {}}
    with db.transaction(OTHER) as cur:
        assert chat_store.brief_on(cur, today) is None


def test_a_launch_is_idempotent_and_the_snapshot_counts_it(db: Database) -> None:
    with db.transaction(ORG) as cur:
        for ext in ("P-002", "P-001", "P-003"):
            cur.execute(
                "INSERT INTO contacts (org_id, external_id, name, company) VALUES (%s, %s, %s, %s)",
                (ORG, ext, f"person {ext}", "co"),
            )
        cur.execute(
            "INSERT INTO deals (org_id, name, stage, value) VALUES (%s, 'd1', 'demo', 100), "
            "(%s, 'd2', 'demo', 50), (%s, 'd3', 'won', NULL)",
            (ORG, ORG, ORG),
        )
        everyone = campaigns.contacts_for_launch(cur, None)
        named = campaigns.contacts_for_launch(cur, ["P-003", "P-001"])
        ids = {
            r["external_id"]: r["id"]
            for r in fetch_all(cur, "SELECT id, external_id FROM contacts")
        }
    assert everyone == [ids["P-001"], ids["P-002"], ids["P-003"]]
    assert named == [ids["P-001"], ids["P-003"]]
    for _ in range(2):  # an approval applied twice launches once
        with db.transaction(ORG) as cur:
            campaigns.launch(
                cur, ORG, "cmp-1", "run-1", name="n", angle="Signal", tier="T1", contact_ids=named
            )
    with db.transaction(ORG) as cur:
        runs = fetch_all(cur, "SELECT id, status, contacts_total FROM campaign_runs")
        members = fetch_value(cur, "SELECT count(*) FROM campaign_contacts")
        snapshot = pipeline.snapshot(cur)
    assert runs == [{"id": "run-1", "status": "running", "contacts_total": 2}]
    assert members == 2
    assert snapshot["deals_by_stage"] == {
        "demo": {"deals": 2, "value": 150},
        "won": {"deals": 1, "value": 0},
    }
    assert snapshot["runs"] == {"running": 1}
    assert (snapshot["contacts"], snapshot["approvals_pending"], snapshot["outbox"]) == (3, 0, {})
    with db.transaction(OTHER) as cur:
        assert campaigns.contacts_for_launch(cur, None) == []
        assert pipeline.snapshot(cur)["contacts"] == 0


def test_kind_of_an_item_and_of_no_item(db: Database) -> None:
    with db.transaction(ORG) as cur:
        item = approvals.add(cur, ORG, "tool_action", "AGT-001", {"tool": "launch_campaign"})
        assert approvals.kind_of(cur, item) == "tool_action"
        assert approvals.kind_of(cur, "no-such-item") is None
        assert approvals.statuses(cur, [item]) == {item: "pending"}  # not locked, not decided
    with db.transaction(OTHER) as cur:
        assert approvals.kind_of(cur, item) is None
