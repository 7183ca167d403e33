"""The circuit breaker waits for a person (issue 39 item 4), and campaign email needs the org's
postal address: real PostgreSQL, the real SMTP server, the send path and the delivery flow.

A campaign's bounces refused at send trip it; nothing resumes it by itself (no delayed resume
task any more); a person's resume is audited and hands the campaign to its resume task,
which re-queues its blocked mail. A sending domain's complaint rate over the window pauses
its mail (deferred, never dropped) until a person resumes it."""

from __future__ import annotations

import json

import pytest

from colony.contracts.events import CampaignResume
from colony.errors import NotFound, Unprocessable
from colony.flows.campaigns import campaign
from colony.flows.outbound import breaker, delivery, postal_address, sending
from colony.registry.functions import CAMPAIGN_RESUME_QUEUE
from colony.runtime.deps import Deps
from colony.store import fetch_all, fetch_one
from colony.store.campaigns import campaigns
from colony.testing.smtp_server import SmtpServer
from tests.test_sending import ORG, POSTAL, approved_message, outbox_row
from tests.test_sending import deps as deps  # the fixture: an org with a postal address

pytestmark = pytest.mark.covers("CONST-005", "ENT-012", "fn:send")


def _campaign(deps: Deps, bounce: float = 0.05, complaint: float = 0.003) -> str:
    with deps.db.transaction(ORG) as cur:
        return campaigns.create(
            cur,
            ORG,
            name="Relay",
            angle="Signal",
            tier="T1",
            bounce_threshold=bounce,
            complaint_threshold=complaint,
        )


def _resume_tasks(deps: Deps) -> list[str]:
    return [t.task_id for t in deps.transport.tasks.values() if t.queue == CAMPAIGN_RESUME_QUEUE]


def _audit(deps: Deps, action: str) -> list[dict[str, object]]:
    with deps.db.transaction(ORG) as cur:
        return fetch_all(
            cur,
            "SELECT actor, channel, event, detail FROM audit_log WHERE action = %s ORDER BY id",
            (action,),
        )


def test_a_tripped_campaign_stays_paused_until_a_person_resumes_it(
    deps: Deps, smtp: SmtpServer
) -> None:
    campaign_id = _campaign(deps)
    good = [approved_message(deps, f"p{i}@h{i}.example", campaign_id=campaign_id) for i in range(8)]
    bad = [
        approved_message(deps, f"bounce-{i}@b{i}.example", campaign_id=campaign_id) for i in (1, 2)
    ]
    waiting = approved_message(deps, "later@h9.example", campaign_id=campaign_id)
    assert [sending.send(deps, ORG, i)["status"] for i in good] == ["sent"] * 8
    assert sending.send(deps, ORG, bad[0])["status"] == "bounced"  # 1 of 9: under the sample
    tripped = sending.send(deps, ORG, bad[1])  # 2 of 10: 20% over 5%
    assert tripped["status"] == "bounced" and tripped["paused"] is True
    assert outbox_row(deps, waiting)["status"] == "blocked"
    assert _resume_tasks(deps) == []  # nothing resumes it by itself any more
    # a later event (a reply) judges it again and still schedules no resume
    delivery.record(deps, ORG, good[0], "replied", "evt-reply-1")
    assert _resume_tasks(deps) == []
    (alert,) = breaker.alerts(deps, ORG)
    assert alert["kind"] == "campaign_paused" and "bounce 20.0%" in alert["message"]
    assert alert["resume"] == {"kind": "campaign", "target": campaign_id}

    resumed = breaker.resume(deps, ORG, "campaign", campaign_id, "user_founder", "ui")
    assert resumed == {
        "kind": "campaign",
        "target": campaign_id,
        "status": "resumed",
        "resumed_by": "user_founder",
    }
    (task_id,) = _resume_tasks(deps)
    (entry,) = _audit(deps, "sending_resumed")
    assert (entry["actor"], entry["channel"], entry["event"]) == ("user_founder", "ui", "decision")
    # the resume task (Cloud Tasks delivers it now) moves the campaign and its mail on
    (task,) = [t for t in deps.transport.tasks.values() if t.task_id == task_id]
    event = CampaignResume.model_validate_json(task.body)
    campaign.resume(deps, event, task_id)
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur, "SELECT status, resumed_by FROM campaigns WHERE id = %s", (campaign_id,)
        )
    assert (row["status"], row["resumed_by"]) == ("active", "user_founder")
    assert outbox_row(deps, waiting)["status"] == "queued"
    assert sending.send(deps, ORG, waiting)["status"] == "sent"
    assert breaker.alerts(deps, ORG) == []
    with pytest.raises(breaker.NotPaused):  # resumed already: a second click changes nothing
        breaker.resume(deps, ORG, "campaign", campaign_id, "user_founder", "ui")
    with pytest.raises(NotFound):
        breaker.resume(deps, ORG, "campaign", "no-such-campaign", "user_founder", "ui")


def test_a_domain_with_too_many_complaints_is_paused_and_its_mail_waits_for_a_person(
    deps: Deps, smtp: SmtpServer
) -> None:
    sent = [approved_message(deps, f"q{i}@r{i}.example") for i in range(breaker.SENDER_MIN_SAMPLE)]
    assert {sending.send(deps, ORG, i)["status"] for i in sent} == {"sent"}
    first = delivery.record(deps, ORG, sent[0], "complained", "evt-complaint-1")
    assert first["paused_senders"] == ["outreach@zoomprop.example", "zoomprop.example"]
    held = approved_message(deps, "next@r1.example")
    waiting = sending.send(deps, ORG, held)
    assert waiting["status"] == "deferred" and "paused by the breaker" in waiting["reason"]
    assert outbox_row(deps, held)["status"] == "queued"  # never dropped
    kinds = sorted(a["kind"] for a in breaker.alerts(deps, ORG))
    assert kinds == ["domain_paused", "mailbox_paused"]
    with deps.db.transaction(ORG) as cur:  # told to the people who want breaker notices
        told = fetch_all(
            cur, "SELECT subject FROM notification_events WHERE kind = 'breaker' ORDER BY id"
        )
    assert [t["subject"] for t in told] == [
        "Sending from outreach@zoomprop.example paused by the circuit breaker",
        "Sending from zoomprop.example paused by the circuit breaker",
    ]

    breaker.resume(deps, ORG, "mailbox", "outreach@zoomprop.example", "user_founder", "admin")
    still = sending.send(deps, ORG, held)  # the domain is still paused
    assert still["status"] == "deferred" and "zoomprop.example is paused" in still["reason"]
    breaker.resume(deps, ORG, "domain", "ZoomProp.example", "user_founder", "admin")
    assert sending.send(deps, ORG, held)["status"] == "sent"
    # the rates start again from the resume: the old complaint does not trip it again
    again = delivery.record(deps, ORG, sent[1], "delivered", "evt-delivered-2")
    assert "paused_senders" not in again
    with pytest.raises(breaker.NotPaused):
        breaker.resume(deps, ORG, "domain", "zoomprop.example", "user_founder", "admin")
    assert [e["detail"]["kind"] for e in _audit(deps, "sending_resumed")] == ["mailbox", "domain"]


def test_campaign_email_from_an_org_without_a_postal_address_is_refused_where_a_person_acts(
    deps: Deps, smtp: SmtpServer
) -> None:
    campaign_id = _campaign(deps)
    queued = approved_message(deps, "ann@granitepeak.example", campaign_id=campaign_id)
    one_off = approved_message(deps, "bo@granitepeak.example")
    with deps.db.transaction(ORG) as cur:  # an admin removed it after the approval
        cur.execute("UPDATE org_settings SET postal_address = NULL")
    with pytest.raises(postal_address.PostalAddressMissing, match="postal-address"):
        campaign.launch(deps, ORG, campaign_id)
    with pytest.raises(postal_address.PostalAddressMissing):
        approved_message(deps, "cy@granitepeak.example", campaign_id=campaign_id)
    waiting = sending.send(deps, ORG, queued)  # approved before: waits, is not sent bare
    assert waiting["status"] == "deferred" and "no postal address" in waiting["reason"]
    assert sending.send(deps, ORG, one_off)["status"] == "sent"  # not campaign email
    (alert,) = postal_address.alerts(deps, ORG)  # /overview says what waits, and why
    assert alert["kind"] == "postal_address_missing"
    assert alert["message"].startswith("1 campaign message(s) wait")
    assert [r.rcpt_tos for r in smtp.received] == [("bo@granitepeak.example",)]

    with pytest.raises(Unprocessable, match="street"):
        postal_address.replace(deps, ORG, "Austin 78701", "user_founder")
    with pytest.raises(Unprocessable, match="not a link"):
        postal_address.replace(deps, ORG, "100 Main St\nhttps://evil.example", "user_founder")
    with pytest.raises(Unprocessable, match="number"):
        postal_address.replace(deps, ORG, "Main Street\nAustin, Texas", "user_founder")
    set_to = postal_address.replace(
        deps, ORG, " ZoomProp Inc.\n100  Congress Ave\nAustin, TX 78701 ", "user_founder"
    )
    assert set_to == {"postal_address": POSTAL}
    assert postal_address.alerts(deps, ORG) == []
    assert sending.send(deps, ORG, queued)["status"] == "sent"
    footer = smtp.received[-1].message.get_content()
    assert f"{POSTAL}\r\nTo stop receiving these emails: " in footer
    (entry,) = _audit(deps, "postal_address_set")
    assert entry["actor"] == "user_founder" and json.dumps(entry["detail"]) == "{}"
