"""Sent messages, replies and call summaries logged as engagements in the org's HubSpot
(issue 36 item 3): the real send flow mails the real SMTP stand-in, a reply is ingested as
the mailbox poll and the inbound webhook ingest it, and the CRM queue's tasks run in the
real crm function, logging through the official client on the HubSpot stand-in.

Each is logged once on the linked contact and deal, however often its task is delivered or
its event redelivered; its text goes to HubSpot and to no log line; an org without HubSpot
pushes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator

import pytest

from colony.adapters.smtp import SmtpSender
from colony.flows.approvals import approval
from colony.flows.outbound import replies, sending
from colony.ports import InboundMail
from colony.store import fetch_one
from colony.testing.smtp_server import SmtpServer
from tests.crm_world import ALPHA, BETA, CrmWorld, crm_world  # noqa: F401  (the fixture)

pytestmark = pytest.mark.covers("fn:crm", "fn:send")

PERSON = approval.Actor("user_1", "ui")
BODY = "Hi Person,\nA thought on your theatre utilisation."
REPLY = "Sounds interesting: can we talk Thursday?"


@pytest.fixture
def world(crm_world: CrmWorld, smtp: SmtpServer) -> Iterator[CrmWorld]:  # noqa: F811
    sender = SmtpSender(smtp.host, smtp.port, starttls=False, timeout=10)
    crm_world.deps = dataclasses.replace(crm_world.deps, mail_sender=sender)
    yield crm_world


def _queued(world: CrmWorld, org: str, kind: str, agent: str, payload: dict[str, str]) -> str:
    """An approval item as its agent queues it; its id."""
    with world.deps.db.transaction(org) as cur:
        return str(
            fetch_one(
                cur,
                "INSERT INTO approval_items (org_id, kind, source_agent, payload)"
                " VALUES (%s, %s, %s, %s::jsonb) RETURNING id",
                (org, kind, agent, json.dumps(payload)),
            )["id"]
        )


def _send(world: CrmWorld, org: str, contact: str) -> str:
    """A message to ``contact`` approved by a person and sent; its outbox id."""
    payload = {"subject": "Theatre utilisation", "body": BODY, "contact_id": contact}
    item = _queued(world, org, "outbound_message", "AGT-005", payload)
    approval.decide(world.deps, org, item, "approve", actor=PERSON)
    with world.deps.db.transaction(org) as cur:
        outbox_id = str(
            fetch_one(cur, "SELECT id FROM outbox WHERE approval_item_id = %s", (item,))["id"]
        )
    assert sending.send(world.deps, org, outbox_id)["status"] == "sent"
    return outbox_id


def _linked(world: CrmWorld, kind: str, engagement_id: str) -> dict[str, set[str]]:
    portal = world.portals[ALPHA]
    return {to: set(portal.linked(kind, engagement_id, to)) for to in ("contacts", "deals")}


def test_a_sent_message_a_reply_and_a_call_are_logged_once_on_the_contact_and_deal(
    world: CrmWorld, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    world.connect(ALPHA)
    contact, deal = world.seed(ALPHA, 0)
    outbox_id = _send(world, ALPHA, contact)
    (sent,) = world.run_tasks()
    assert (sent["kind"], sent["status"]) == ("email", "written")
    portal = world.portals[ALPHA]
    email = portal.get("emails", sent["remote_id"])
    assert email is not None and email.properties["hs_email_text"] == BODY
    assert email.properties["hs_email_direction"] == "EMAIL"
    assert _linked(world, "emails", email.id) == {"contacts": {"1001"}, "deals": {"9001"}}

    # the reply, ingested twice (the webhook redelivered, the mailbox read again)
    with world.deps.db.transaction(ALPHA) as cur:
        message_id = fetch_one(cur, "SELECT message_id FROM outbox WHERE id = %s", (outbox_id,))
    mail = InboundMail(
        message_id="<reply-1@mercy0.example>",
        sender="person0@mercy0.example",
        subject="Re: Theatre utilisation",
        text=REPLY,
        in_reply_to=message_id["message_id"],
    )
    first = replies.ingest(world.deps, mail, event_id="ev-1", org_id=ALPHA)
    again = replies.ingest(world.deps, mail, event_id="ev-2", org_id=ALPHA)
    assert (first["status"], again["status"]) == ("stored", "duplicate")
    (reply,) = world.run_tasks()
    inbound = portal.get("emails", reply["remote_id"])
    assert inbound is not None and inbound.properties["hs_email_direction"] == "INCOMING_EMAIL"
    assert inbound.properties["hs_email_text"] == REPLY

    # the call's summary: AGT-006's words, logged once a person approves the call's
    # follow-up (the recording stored as AGT-006 leaves it; the card as AGT-007 queues it)
    conn = world.db.owner_connection()
    conn.cursor().execute(
        "INSERT INTO recordings (id, org_id, deal_id, title, status, summary, processed_at)"
        " VALUES ('rec-1', %s, %s, 'Mercy 0 discovery call', 'processed', %s, now())",
        (ALPHA, deal, "They want a pilot in one theatre."),
    )
    conn.commit()
    conn.close()
    recap = {"subject": "Our call", "body": "Thanks for the time.", "recording_id": "rec-1"}
    recap |= {"deal_id": deal, "contact_id": contact, "to": "person0@mercy0.example"}
    follow_up = _queued(world, ALPHA, "follow_up", "AGT-007", recap)
    assert world.crm_tasks() == []  # a model's summary alone reaches nothing
    approval.decide(world.deps, ALPHA, follow_up, "approve", actor=PERSON)
    (call,) = world.run_tasks()
    logged = portal.get("calls", call["remote_id"])
    assert logged is not None and logged.properties["hs_call_body"].startswith("They want")
    assert _linked(world, "calls", logged.id) == {"contacts": {"1001"}, "deals": {"9001"}}

    # every task delivered again: nothing logged twice
    creates = [r.route for r in world.hubspot.requests].count("objects.create")
    replayed = world.replay()
    assert {a["duplicate"] for a in replayed} == {True} and len(replayed) == 3
    assert [r.route for r in world.hubspot.requests].count("objects.create") == creates == 3
    assert (portal.count("emails"), portal.count("calls")) == (2, 1)
    assert [p["status"] for p in world.pushes(ALPHA)] == ["written"] * 3
    # what the prospect was told and said went to HubSpot, never to a log line
    # (ours: the SMTP stand-in's own debug log prints what it received)
    logged_text = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("colony"))
    assert "theatre utilisation" not in logged_text.lower() and "Thursday" not in logged_text


def test_a_retried_task_logs_one_email_even_when_the_first_delivery_lost_its_answer(
    world: CrmWorld,
) -> None:
    world.connect(ALPHA)
    contact, _ = world.seed(ALPHA, 0)
    _send(world, ALPHA, contact)
    (task,) = world.crm_tasks()
    # two deliveries of the one task (the first one's answer lost, Cloud Tasks retried it)
    first, second = world.post(task.body), world.post(task.body)
    assert first["status"] == "written" and second["duplicate"] is True
    assert world.portals[ALPHA].count("emails") == 1


def test_an_org_without_hubspot_or_an_unlinked_contact_logs_nothing(world: CrmWorld) -> None:
    world.connect(ALPHA)
    betas, _ = world.seed(BETA, 0)  # beta never connected HubSpot
    _send(world, BETA, betas)
    assert world.crm_tasks() == [] and world.pushes(BETA) == []
    unlinked, _ = world.seed(ALPHA, 1, linked=False)
    _send(world, ALPHA, unlinked)
    (answer,) = world.run_tasks()
    assert answer["status"] == "unlinked"
    assert world.portals[ALPHA].count("emails") == 0 and world.portals[BETA].count("emails") == 0
