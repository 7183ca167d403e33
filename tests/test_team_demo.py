"""``make run``'s team scene against real local servers: every function served by
functions-framework, the real SMTP server, the Slack stand-in, the embedded PostgreSQL.
Two people join by Clerk's signed webhooks, the admin API assigns the demo prospects to them
and sets the team's time zone, a deal update waits in its owner's queue, a positive reply is
told in Slack and by an email digest, and the brief comes at 08:00 in America/New_York. What
the scene prints is what the stores and the stand-ins hold."""

from __future__ import annotations

import smtplib
from datetime import datetime
from email.message import EmailMessage
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from colony.local.campaign_demo import demo_functions
from colony.local.demo_context import DemoContext
from colony.local.team_demo import REPLY, ZONE, run_team_demo, slack_stand_in
from colony.store import Database, fetch_all, fetch_one
from colony.testing.smtp_server import SmtpServer
from tests.conftest import APP_ROLE, PgDB
from tests.demo_org import loaded_demo

pytestmark = pytest.mark.covers("fn:clerk-webhook", "fn:admin", "fn:chat", "fn:send")

SENT_ID = "<campaign-p001@zoomprop.example>"


def _sent_message(db: Database, org: str, mail: SmtpServer) -> None:
    """What make run's campaign leaves before this scene: a message sent to a prospect (the
    outbox row the send function marks sent, and the mail the SMTP server received)."""
    with db.transaction(org) as cur:
        contact = fetch_one(cur, "SELECT id, email FROM contacts WHERE external_id = 'P-001'")
        assert contact is not None
        item = fetch_one(
            cur,
            "INSERT INTO approval_items (org_id, kind, source_agent, subject_id, payload, status)"
            " VALUES (%s, 'outbound_message', 'AGT-005', %s, '{}'::jsonb, 'approved')"
            " RETURNING id",
            (org, contact["id"]),
        )
        assert item is not None
        cur.execute(
            "INSERT INTO outbox (org_id, approval_item_id, contact_id, subject, body, status,"
            " message_id) VALUES (%s, %s, %s, 'Lease costs at Mercy Ridge', 'Hi', 'sent', %s)",
            (org, item["id"], contact["id"], SENT_ID),
        )
    message = EmailMessage()
    message["From"], message["To"] = "ZoomProp <outreach@zoomprop.example>", contact["email"]
    message["Subject"], message["Message-ID"] = "Lease costs at Mercy Ridge", SENT_ID
    message.set_content("Hi")
    with smtplib.SMTP(mail.host, mail.port, timeout=10) as client:
        client.send_message(message)


def test_the_team_owns_the_prospects_hears_the_reply_and_gets_the_brief_in_its_morning(
    testdb: PgDB, tmp_path: Path, no_ambient_config: None, smtp: SmtpServer
) -> None:
    loaded = loaded_demo(testdb, tmp_path)
    settings, db, org = loaded.settings, loaded.db, loaded.org_id
    _sent_message(db, org, smtp)
    said: list[str] = []
    with (
        slack_stand_in(said.append) as slack,
        demo_functions(settings, org, testdb.dsn(APP_ROLE), said.append, extra_env=smtp.env()) as (
            servers,
            token,
        ),
    ):
        demo = DemoContext(settings, db, loaded.knowledge, org, servers, token, said.append, smtp)
        start = len(said)
        day = run_team_demo(demo, slack)
        printed = "\n".join(said[start:])
        again = run_team_demo(demo, slack)  # a second make run (in the next minute's run)

    def rows(sql: str) -> list[dict]:
        with db.transaction(org) as cur:
            return fetch_all(cur, sql)

    # the two people came through Clerk's webhook, with their roles
    people = rows("SELECT user_id, role, status FROM org_members ORDER BY user_id")
    assert people == [
        {"user_id": "user_maya", "role": "org:admin", "status": "active"},
        {"user_id": "user_theo", "role": "org:member", "status": "active"},
    ]
    # every prospect has one of them as owner; those outside the US are Theo's by the rule
    owned = rows("SELECT owner_id, enrichment->>'country' AS country FROM contacts")
    assert {o["owner_id"] for o in owned} == {"user_maya", "user_theo"}
    assert {o["owner_id"] for o in owned if o["country"] != "US"} == {"user_theo"}
    assert day.owners == {
        u: sum(o["owner_id"] == u for o in owned) for u in ("user_maya", "user_theo")
    }
    assert rows("SELECT time_zone FROM org_team") == [{"time_zone": ZONE}]
    # the deal update waits in its deal's owner's queue, as the chat API's card said
    items = rows(
        "SELECT a.id, a.assignee, d.owner_id FROM approval_items a"
        " JOIN deals d ON d.id = a.payload->>'deal_id' WHERE a.kind = 'deal_update' ORDER BY a.id"
    )
    assert sorted([day.item_id, again.item_id]) == [i["id"] for i in items]
    item = next(i for i in items if i["id"] == day.item_id)
    assert day.item_queue == item["assignee"] == item["owner_id"]
    # the positive reply: a Slack message to Maya and Theo's digest, its subject line only
    to_maya, _ = [p for p in slack.posted if p.to == "U0MAYA" and "Reply" in p.text]  # 2 runs
    assert day.slack == to_maya.text and "Lease costs at Mercy Ridge" in to_maya.text
    digests = [m for m in smtp.received if "theo@zoomprop.example" in m.rcpt_tos]
    assert digests and repr(str(digests[0].message["Subject"])) == day.digest
    assert day.digest.startswith("'Colony: ")
    body = digests[0].message.get_body(("plain",))
    assert body is not None and "Reply: Lease costs at Mercy Ridge" in body.get_content()
    every_text = [p.text for p in slack.posted] + [m.message.as_string() for m in smtp.received]
    assert not any(REPLY.split(",")[1].strip() in t for t in every_text)  # the reply's text
    # the brief: 08:00 in New York, to Maya in Slack and to Theo by email
    local = datetime.fromisoformat(day.brief_local)
    assert (
        local.tzinfo is not None
        and local.utcoffset() == local.astimezone(ZoneInfo(ZONE)).utcoffset()
    )
    assert (local.hour, local.minute) == (8, 0)
    assert len(day.brief_subjects) == 2
    assert any(s.startswith("Colony brief for") for s in day.brief_subjects)
    # what was printed is that state
    assert "Maya Chen (admin) and Theo Okafor (member) joined" in printed
    assert f"user_theo owns {day.owners['user_theo']}" in printed
    name = {"user_maya": "Maya Chen", "user_theo": "Theo Okafor"}[item["assignee"]]
    assert f"waits in {name}'s queue (theirs" in printed
    assert repr(day.slack) in printed and day.digest in printed
    assert f"{local:%H:%M}" in printed and ZONE in printed

    # a second make run: nobody reassigned, the new reply told in Slack, Theo's digest held by
    # the hourly limit (not a second one within the hour), the day's brief not sent again
    assert again.owners == day.owners and again.item_queue == day.item_queue
    assert again.slack.startswith("A positive reply")
    assert again.digest.startswith("held in the open digest until")
    assert again.brief_subjects == []
    # Theo's mail: run 1's digest and brief; the held digest went with run 2's brief turn, on
    # the clock moved past its hour (the moved clock is the scene's, the functions keep theirs)
    theo = [str(m.message["Subject"]) for m in smtp.received if "theo@" in m.rcpt_tos[0]]
    assert len(theo) == 3 and theo[1].startswith("Colony brief for"), theo
    assert theo[0] == day.digest.strip("'") and theo[2].startswith("Colony: "), theo
