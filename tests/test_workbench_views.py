"""What /overview's views are drawn from, against the real PostgreSQL as the application
role: the pipeline by stage (``store.insights.pipeline.by_stage``), each campaign's funnel
counted in one statement (``store.insights.funnels``), the notification that moves a funnel live
(migration 0038's triggers, heard on a real ``LISTEN`` connection) and the hub's count of them,
and the brief's five sections (``flows.insights.brief_text.sections_of``). Every read is scoped to
the org.

The page itself, in Chromium, is ``tests/test_overview_views_browser.py``."""

from __future__ import annotations

from typing import Any

import pytest

from colony.chat.hub import Hub
from colony.flows.insights.brief_text import SECTIONS, render, sections_of
from colony.store import chat_events
from colony.store.approvals import approvals
from colony.store.campaigns import campaigns
from colony.store.db import Database, fetch_value
from colony.store.insights import funnels, pipeline
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("ENT-002", "ENT-003", "ENT-005", "ENT-009", "ENT-011", "ENT-012")

ORG, OTHER = "org_a", "org_b"


@pytest.fixture
def db(testdb: PgDB) -> Database:
    db = testdb.app()
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    return db


def _contact(cur: Any, org: str, n: int) -> str:
    return str(
        fetch_value(
            cur,
            "INSERT INTO contacts (org_id, external_id, name, company, email)"
            " VALUES (%s, %s, %s, 'co', %s) RETURNING id",
            (org, f"P-{n}", f"person {n}", f"p{n}@example.org"),
        )
    )


def _campaign(cur: Any, name: str, angle: str, tier: str) -> str:
    return campaigns.create(
        cur,
        ORG,
        name=name,
        angle=angle,
        tier=tier,
        bounce_threshold=0.05,
        complaint_threshold=0.003,
    )


def _draft(cur: Any, org: str, campaign: str, contact: str) -> str:
    payload = {"campaign_id": campaign, "contact_id": contact, "subject": "s", "body": "b"}
    return approvals.add(cur, org, "outbound_message", "AGT-005", payload)


def _mail(cur: Any, org: str, campaign: str, contact: str, item: str, status: str) -> str:
    return str(
        fetch_value(
            cur,
            "INSERT INTO outbox (org_id, approval_item_id, campaign_id, contact_id, subject, body,"
            " status) VALUES (%s, %s, %s, %s, 's', 'b', %s) RETURNING id",
            (org, item, campaign, contact, status),
        )
    )


def test_deals_by_stage_with_the_largest_of_each(db: Database) -> None:
    with db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO deals (org_id, name, stage, value) VALUES (%s, 'small', 'demo', 10),"
            " (%s, 'big', 'demo', 300), (%s, 'mid', 'demo', 50), (%s, 'tiny', 'demo', 1),"
            " (%s, 'unvalued', 'proposal', NULL)",
            (ORG,) * 5,
        )
        rows = pipeline.by_stage(cur, 3)
    assert [(r["stage"], r["deals"], float(r["value"])) for r in rows] == [
        ("demo", 4, 361.0),
        ("proposal", 1, 0.0),
    ]
    assert [t["name"] for t in rows[0]["top"]] == ["big", "mid", "small"]
    assert rows[1]["top"] == [{"name": "unvalued", "value": None}]
    with db.transaction(OTHER) as cur:
        assert pipeline.by_stage(cur, 3) == []


def test_a_funnel_counts_each_stage_per_contact_in_one_statement(db: Database) -> None:
    with db.transaction(ORG) as cur:
        people = [_contact(cur, ORG, n) for n in range(5)]
        first = _campaign(cur, "first", "Signal", "T1")
    with db.transaction(ORG) as cur:  # now() is the transaction's: the second is newer
        second = _campaign(cur, "second", "Pain", "T2")
        for p in people:
            campaigns.add_contact(cur, ORG, first, p)
        campaigns.add_contact(cur, ORG, second, people[0])
        for p in people[:4]:
            campaigns.set_score(cur, p, 80, [], "qualify", "T1")
        campaigns.set_score(cur, people[4], 20, [], "disqualify")
        drafts = [_draft(cur, ORG, first, p) for p in people[:3]]
        _draft(cur, ORG, first, people[0])  # a second draft for one contact counts it once
        for item in drafts[:2]:
            approvals.decide(cur, item, "approved", "u1", None)
        sent = _mail(cur, ORG, first, people[0], drafts[0], "delivered")
        _mail(cur, ORG, first, people[1], drafts[1], "queued")  # not sent yet
        cur.execute(
            "INSERT INTO replies (org_id, outbox_id, contact_id, message_id, body, sentiment)"
            " VALUES (%s, %s, %s, 'm1', 'yes please', 'positive')",
            (ORG, sent, people[0]),
        )
        campaigns.start_run(cur, "run-1", ORG, first, "running", 5)
        rows = funnels.recent(cur, 10)
    assert [r["name"] for r in rows] == ["second", "first"]  # newest first
    counts = {r["name"]: {s: r[s] for s in funnels.STAGES} for r in rows}
    assert counts["first"] == {
        "contacts": 5,
        "qualified": 4,
        "drafted": 3,
        "approved": 2,
        "sent": 1,
        "replied": 1,
    }
    assert counts["second"] == {
        "contacts": 1,
        "qualified": 1,
        "drafted": 0,
        "approved": 0,
        "sent": 0,
        "replied": 0,
    }
    assert [r["running"] for r in rows] == [False, True]
    assert (rows[1]["run_done"], rows[1]["run_total"]) == (0, 5)
    with db.transaction(ORG) as cur:
        assert [r["name"] for r in funnels.recent(cur, 1)] == ["second"]
    with db.transaction(OTHER) as cur:
        assert funnels.recent(cur, 10) == []


def test_what_a_funnel_counts_notifies_the_org_and_only_at_commit(db: Database) -> None:
    listener = db.connect()
    try:
        listener.autocommit = True
        funnels.listen(listener)

        def heard() -> list[str]:
            chat_events.ping(listener)  # pg8000 reads what arrived when it runs a statement
            found = [p for _, channel, p in listener.notifications if channel == funnels.CHANNEL]
            listener.notifications.clear()
            return found

        with db.transaction(ORG) as cur:
            contact = _contact(cur, ORG, 1)
            campaign = _campaign(cur, "c", "Signal", "T1")
            campaigns.add_contact(cur, ORG, campaign, contact)
            assert heard() == []  # nothing before the commit
        assert heard() == [ORG]  # one per org and transaction, however many rows
        with db.transaction(ORG) as cur:
            cur.execute("UPDATE contacts SET title = 'VP' WHERE id = %s", (contact,))
        assert heard() == [], "a change no funnel counts is not announced"
        with db.transaction(ORG) as cur:
            campaigns.set_score(cur, contact, 90, [], "qualify", "T1")
        with db.transaction(OTHER) as cur:
            _contact(cur, OTHER, 1)  # a new contact in no campaign: no funnel moves
        assert heard() == [ORG]
        with db.transaction(ORG) as cur:
            item = _draft(cur, ORG, campaign, contact)
            _mail(cur, ORG, campaign, contact, item, "queued")
        assert heard() == [ORG]
        with db.transaction(ORG) as cur:
            campaigns.start_run(cur, "run-1", ORG, campaign, "running", 1)
        assert heard() == [ORG]
        with db.transaction(ORG) as cur:
            campaigns.contact_done(cur, "run-1")  # progress, and the run completes
            assert funnels.recent(cur, 1)[0]["running"] is False
        assert heard() == [ORG]
    finally:
        listener.close()


def test_the_hub_counts_funnel_changes_per_org_approvals_included() -> None:
    hub = Hub(lambda: None)
    assert hub.campaigns_seq("org_a") == 0
    hub.announce_campaigns("org_a")
    hub.announce_item("org_a", "i1")  # a draft or a decision moves a funnel too
    hub.announce_campaigns("org_b")
    assert hub.campaigns_seq("org_a") == 2 and hub.campaigns_seq("org_b") == 1
    assert hub.wait_campaigns("org_a", 1, 0.01)
    assert not hub.wait_campaigns("org_a", 2, 0.01)


def test_the_brief_reads_as_its_five_sections() -> None:
    stored = {key: f"{title} text" for key, title in SECTIONS}
    expected = [{"key": k, "title": t, "text": f"{t} text"} for k, t in SECTIONS]
    assert sections_of("", stored) == expected
    # an older brief kept only its text: read back from render's "Title: …" lines
    text = render({**stored, "alerts": "first line\n- second line"})
    back = sections_of(text, {})
    assert back is not None and [s["title"] for s in back] == [t for _, t in SECTIONS]
    assert back[1]["text"] == "first line\n- second line"
    assert back[4]["text"] == "Today's Priorities text"
    assert sections_of("Brief: 5 open deals; 2 items await you.", None) is None
    assert sections_of(text, {"pipeline": "only one"}) == back  # incomplete: the text decides
