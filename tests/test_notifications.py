"""Notifications (issue 35 item 3) against the real embedded PostgreSQL, the real SMTP server
and adapter, and the Slack stand-in through the official slack_sdk: the events the flows'
own tables record, each person's choice, an email digest at most hourly, Slack messages with
a link, sent once each; nobody who left, nothing about an erased prospect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from colony.flows.notifications import settings as notify
from colony.store.approvals import approvals
from colony.testing.slack_server import SlackServer
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB
from tests.notify_world import ORG, World, make_world

pytestmark = pytest.mark.covers("ENT-011")


@pytest.fixture
def world(testdb: PgDB, tmp_path: Path, smtp: SmtpServer) -> Iterator[World]:
    with SlackServer() as slack:
        yield make_world(testdb.app(), tmp_path, smtp, slack)


def test_the_flows_tables_record_each_fact_once(world: World) -> None:
    contact = world.contact()
    item = world.item("Lease costs at Granite Peak", contact)
    world.reply(item, contact, "positive")
    world.reply(world.item("Second", contact), contact, "unknown")  # nothing to tell
    world.sql(
        "INSERT INTO campaigns (id, org_id, name, angle, tier, status)"
        " VALUES ('c1', %s, 'Spring', 'Signal', 'T1', 'active')",
        (ORG,),
    )
    world.sql("UPDATE campaigns SET status = 'paused', paused_at = now() WHERE id = 'c1'")
    world.sql("UPDATE campaigns SET status = 'paused' WHERE id = 'c1'")  # no new pause
    job = world.rows(
        "INSERT INTO import_jobs (org_id, kind, format, filename, object_name, declared_bytes,"
        " requested_by, status) VALUES (%s, 'prospects', 'csv', 'a.csv', 'o', 10, 'user_bob',"
        " 'running') RETURNING id",
        (ORG,),
    )[0]["id"]
    world.sql("UPDATE import_jobs SET status = 'completed', rows_created = 7 WHERE id = %s", (job,))
    world.sql(
        "INSERT INTO budget_alerts (org_id, month, kind, spent_usd, budget_usd, alert_share,"
        " hard_cap) VALUES (%s, '2026-11-01', 'soft', 80.5, 100, 0.8, true)",
        (ORG,),
    )
    got = world.rows("SELECT kind, subject, link, contact_id FROM notification_events ORDER BY id")
    kinds = [g["kind"] for g in got]
    assert kinds == [
        "items_waiting",
        "positive_reply",
        "items_waiting",
        "breaker",
        "import",
        "budget",
    ]
    assert got[0]["subject"] == "outbound message: Lease costs at Granite Peak"
    assert got[0]["link"] == f"/overview#item-{item}" and got[0]["contact_id"] == contact
    assert got[1]["subject"] == "Reply: Lease costs"
    assert got[3]["subject"] == 'Campaign "Spring" paused by the circuit breaker'
    assert got[4]["subject"] == "Import of prospects completed: 7 created, 0 updated, 0 rejected"
    assert got[5]["subject"] == "Budget alert: 80.50 of 100.00 USD this month"
    # the other org sees none of them
    assert world.rows("SELECT id FROM notification_events", org_id="org_beta") == []


def test_an_item_reaches_slack_and_an_email_digest_once_each(world: World) -> None:
    world.connect_slack()
    world.slack_user("user_alice", "U0ALICE")
    world.choose("user_alice", items_waiting="slack")
    item = world.item("Lease costs at Granite Peak", world.contact())
    first = world.run()
    again = world.run()  # the next minute's run, and a redelivered task: nothing twice
    world.clock.move(minutes=1)
    world.run()
    assert first["fanned"]["notified"] == 2  # alice by Slack, bob by email (carol: no address)
    assert first["sent"] == {"sent": 2}
    assert again["sent"] == {} and again["fanned"]["events"] == 0
    (post,) = world.slack_posts("U0ALICE")
    assert post.team_id == "T0ALPHA"
    assert "Lease costs at Granite Peak" in post.text
    assert "the whole body" not in str(post.blocks)  # a subject line, never the draft
    buttons = post.blocks[1]["elements"]
    assert [b["action_id"] for b in buttons] == ["approve", "reject", "open"]
    assert buttons[0]["value"] == f"{ORG}:{item}"
    assert buttons[2]["url"] == f"https://colony.example/overview#item-{item}"
    (mail,) = world.mails_to("bob@alpha.example")
    body = mail.message.get_content()
    assert mail.message["Subject"] == "Colony: 1 update"
    assert mail.message["From"] == "Alpha <team@alpha.example>"
    assert f"https://colony.example/overview#item-{item}" in body
    assert "the whole body" not in body
    assert world.mails_to("dan@alpha.example") == []  # dan left the org
    assert len(world.smtp.received) == 1


def test_email_is_a_digest_at_most_hourly(world: World) -> None:
    contact = world.contact()
    world.item("First", contact)
    world.run()  # bob's first digest goes at once: nothing was sent to him this hour
    for minute in (5, 20, 40):
        world.clock.now = world.clock.now.replace(minute=minute)
        world.item(f"At minute {minute}", contact)
        world.run()
    assert len(world.mails_to("bob@alpha.example")) == 1
    world.clock.move(minutes=21)  # 10:01: an hour after the first digest
    world.run()
    first, second = world.mails_to("bob@alpha.example")
    assert "First" in first.message.get_content()
    text = second.message.get_content()
    assert second.message["Subject"] == "Colony: 3 updates"
    assert all(f"At minute {m}" in text for m in (5, 20, 40)) and "First" not in text
    world.clock.move(hours=3)
    world.run()
    assert len(world.mails_to("bob@alpha.example")) == 2  # nothing new: no empty digest


def test_nothing_about_an_erased_prospect_is_sent(world: World) -> None:
    contact = world.contact()
    world.item("About Dana", contact)
    world.sql("DELETE FROM approval_items WHERE payload->>'contact_id' = %s", (contact,))
    world.sql("DELETE FROM contacts WHERE id = %s", (contact,))
    result = world.run()
    assert result["fanned"] == {"events": 1, "erased": 1, "notified": 0}
    assert world.smtp.received == [] and world.slack_posts() == []
    # erased after it was fanned out but before it left: dropped, not sent
    later = world.contact("Erin Vale")
    world.item("About Erin", later)
    world.run()  # bob's digest goes at once
    world.item("About Erin again", later)
    world.run()  # waits for the hour
    world.sql("DELETE FROM approval_items WHERE payload->>'contact_id' = %s", (later,))
    world.sql("DELETE FROM contacts WHERE id = %s", (later,))
    world.clock.move(hours=1, minutes=1)
    world.run()
    assert len(world.mails_to("bob@alpha.example")) == 1  # the first, before the erasure
    assert len(world.mails_to("alice@alpha.example")) == 1
    assert world.rows(
        "SELECT user_id, error FROM notifications WHERE status = 'dropped' ORDER BY user_id"
    ) == [
        {"user_id": u, "error": "nothing left to tell (erased)"} for u in ("user_alice", "user_bob")
    ]


def test_a_person_who_left_gets_nothing_even_already_queued(world: World) -> None:
    contact = world.contact()
    world.item("One", contact)
    world.run()
    world.item("Two", contact)
    world.run()  # bob's second digest is waiting for the hour
    world.sql("UPDATE org_members SET status = 'left', left_at = now() WHERE user_id = 'user_bob'")
    world.clock.move(hours=2)
    world.run()
    assert len(world.mails_to("bob@alpha.example")) == 1
    assert len(world.mails_to("alice@alpha.example")) == 2  # alice is still here
    assert world.rows("SELECT user_id, error FROM notifications WHERE status = 'dropped'") == [
        {"user_id": "user_bob", "error": "the person left the org"}
    ]


def test_a_budget_alert_reaches_the_admins_and_is_marked_delivered(world: World) -> None:
    world.sql(
        "INSERT INTO budget_alerts (org_id, month, kind, spent_usd, budget_usd, alert_share,"
        " hard_cap) VALUES (%s, '2026-11-01', 'reached', 100, 100, 0.8, true)",
        (ORG,),
    )
    world.run()
    (mail,) = world.smtp.received  # alice is the admin; bob chose nothing: not his
    assert mail.rcpt_tos == ("alice@alpha.example",)
    assert "Budget reached: 100.00 of 100.00 USD" in mail.message.get_content()
    (alert,) = world.rows("SELECT delivered_at FROM budget_alerts")
    assert alert["delivered_at"] == world.clock.now


def test_preferences_are_a_persons_own_and_checked(world: World) -> None:
    from pydantic import ValidationError

    from colony.contracts.notifications import PreferencesUpdate
    from colony.errors import Conflict, Forbidden

    world.choose("user_bob", negative_reply="slack", items_waiting="off")
    mine = notify.preferences(world.deps, ORG, "user_bob")
    assert mine["channels"]["negative_reply"] == "slack"
    assert mine["channels"]["items_waiting"] == "off"
    assert mine["channels"]["positive_reply"] == "email"  # the default
    assert notify.preferences(world.deps, ORG, "user_alice")["channels"]["items_waiting"] == "email"
    with pytest.raises(ValidationError):
        PreferencesUpdate.model_validate({"channels": {"items_waiting": "fax"}})
    with pytest.raises(ValidationError):
        PreferencesUpdate.model_validate({"channels": {"gossip": "email"}})
    with pytest.raises(Forbidden):  # dan left; mallory is another org's
        world.choose("user_dan", brief="email")
    with pytest.raises(Forbidden):
        world.choose("user_mallory", brief="email")
    world.slack_user("user_alice", "U0ALICE")
    with pytest.raises(Conflict):
        world.slack_user("user_bob", "U0ALICE")


def test_an_item_waiting_is_told_to_whose_queue_it_is_in(world: World) -> None:
    """Routing (issue 35 item 2) decides who hears of an item: the prospect's owner for a
    draft about them, the admins for a KC candidate; nobody else's digest or Slack."""
    world.connect_slack()
    world.slack_user("user_alice", "U0ALICE")
    world.slack_user("user_bob", "U0BOB")
    for person in ("user_alice", "user_bob"):
        world.choose(person, items_waiting="slack")
    dana = world.contact()
    world.sql("UPDATE contacts SET owner_id = 'user_bob' WHERE id = %s", (dana,))
    with world.db.transaction(ORG) as cur:
        draft = approvals.add(
            cur,
            ORG,
            "outbound_message",
            "AGT-005",
            {"subject": "Lease costs", "body": "Hi", "contact_id": dana},
            subject_id=dana,
        )
        candidate = approvals.add(
            cur,
            ORG,
            "kc_update_candidate",
            "AGT-006",
            {"domain": "KC-09", "title": "New objection", "content": "x"},
        )
    queues = dict(world.sql("SELECT id, coalesce(assignee, assignee_role) FROM approval_items"))
    assert queues == {draft: "user_bob", candidate: "admin"}
    world.run()
    bob = [p.text for p in world.slack_posts("U0BOB")]
    alice = [p.text for p in world.slack_posts("U0ALICE")]
    assert len(bob) == 1 and "Lease costs" in bob[0]  # the owner's draft, to the owner only
    assert len(alice) == 1 and "Lease costs" not in alice[0]  # the admins' candidate
