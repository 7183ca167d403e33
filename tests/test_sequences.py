"""Sequences (issue 18 item 2): real PostgreSQL, the offline model, a real SMTP server
(aiosmtpd) through the real SMTP adapter, and the inline transport, whose scheduled tasks the
tests deliver by hand (as Cloud Tasks would once each delay has passed).

A contact walks its sequence step by step: step n+1 is drafted only after step n was sent,
knowing what was sent; it is scheduled after the step's delay, in the contact's business
hours; it threads under the earlier steps; and a reply, bounce, complaint, unsubscribe or a
rejected step stops it at once, tasks already scheduled included.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.smtp import SmtpSender
from colony.contracts.events import SequenceStep
from colony.contracts.tasks import SendMessage
from colony.errors import HandoffRefused
from colony.flows.approvals import approval
from colony.flows.campaigns import campaign, message_generator
from colony.flows.outbound import delivery, sending, sequences
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.llm.runner import StructuredRunner
from colony.local.demo import load_demo
from colony.policy.schedule import in_business_hours
from colony.ports import ModelRequest, ModelResponse
from colony.registry.functions import SEND_QUEUE, SEQUENCE_QUEUE
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.testing.inline import FIXED_NOW, InlineTransport, local_deps, run_until_idle
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("ENT-004", "ENT-012")

ORG = "org_zoomprop_demo"
PERSON = approval.Actor("user_founder", "ui")
SETTINGS = {
    "COLONY_MAIL_FROM": "ZoomProp <outreach@zoomprop.example>",
    "COLONY_UNSUBSCRIBE_URL": "https://colony.example/unsubscribe",
    "COLONY_UNSUBSCRIBE_TOKEN_KEY": "u" * 40,
}
DAY = 86400.0


class SeenModel:
    """The offline model, and the requests it was sent (to read what AGT-005 was told)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.requests = inner, []

    def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.inner.request(request)


def demo_deps(testdb: PgDB, smtp: SmtpServer) -> Deps:
    """The demo org loaded, the offline model behind a ``SeenModel``, mail to ``smtp``."""
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    settings = Settings.from_env(SETTINGS)
    llm = llm_from_settings(settings, db)
    seen = SeenModel(llm.chat)
    llm = dataclasses.replace(llm, chat=seen, runner=StructuredRunner(seen))
    sender = SmtpSender(smtp.host, smtp.port, starttls=False, timeout=10)
    return local_deps(settings, db, InlineTransport(), llm, knowledge, sender=sender)


@pytest.fixture
def deps(testdb: PgDB, smtp: SmtpServer) -> Deps:
    deps = demo_deps(testdb, smtp)
    with deps.db.transaction(ORG) as cur:  # a three-step library for Signal × T1
        cur.execute("DELETE FROM sequences WHERE angle = 'Signal' AND tier = 'T1'")
        for step, delay in ((1, 0), (2, 3), (3, 5)):
            cur.execute(
                "INSERT INTO sequences (org_id, angle, tier, step, delay_days, guidance)"
                " VALUES (%s, 'Signal', 'T1', %s, %s, 'one new detail each time')",
                (ORG, step, delay),
            )
    return deps


def launch(deps: Deps, contacts: int = 6) -> str:
    """A Signal × T1 campaign over the first ``contacts`` demo contacts with signals, run to
    the end; its run id."""
    with deps.db.transaction(ORG) as cur:
        ids = [
            r["id"]
            for r in fetch_all(
                cur,
                "SELECT id FROM contacts WHERE jsonb_array_length(signals) > 0"
                " ORDER BY external_id LIMIT %s",
                (contacts,),
            )
        ]
    campaign_id = campaign.create_campaign(
        deps, ORG, name="Signal T1", angle="Signal", tier="T1", contact_ids=ids
    )
    run_id = campaign.launch(deps, ORG, campaign_id)
    assert not run_until_idle(deps, deps.transport).rejected
    return run_id


def drafted(deps: Deps, contacts: int = 3) -> list[dict[str, Any]]:
    """Run a Signal × T1 campaign over a few demo contacts that qualify; the first
    ``contacts`` step-1 drafts (id, contact, payload)."""
    launch(deps)
    drafts = pending(deps)
    assert len(drafts) >= contacts
    return drafts[:contacts]


def pending(deps: Deps, step: int = 1) -> list[dict[str, Any]]:
    with deps.db.transaction(ORG) as cur:
        return fetch_all(
            cur,
            "SELECT a.id, a.subject_id AS contact, a.payload FROM approval_items a"
            " JOIN contacts c ON c.id = a.subject_id WHERE a.status = 'pending'"
            " AND (a.payload->>'sequence_step')::int = %s ORDER BY c.external_id",
            (step,),
        )


def run_tasks(deps: Deps, queue: str) -> list[dict[str, Any]]:
    """Deliver (and forget) every task scheduled on ``queue``, as Cloud Tasks would once due;
    AGT-005's Pub/Sub events they publish are delivered too."""
    transport = deps.transport
    assert isinstance(transport, InlineTransport)
    due = {name: t for name, t in transport.tasks.items() if t.queue == queue}
    results = []
    for name, task in due.items():
        del transport.tasks[name]
        body = json.loads(task.body)
        if queue == SEND_QUEUE:
            results.append(sending.send(deps, ORG, SendMessage(**body).outbox_id))
        else:
            results.append(sequences.due(deps, SequenceStep(**body)))
    assert not run_until_idle(deps, transport).rejected
    return results


def tasks(deps: Deps, queue: str) -> dict[str, Any]:
    transport = deps.transport
    assert isinstance(transport, InlineTransport)
    return {t.task_id: t for t in transport.tasks.values() if t.queue == queue}


def enrollment(
    deps: Deps, contact_id: str, columns: str = "step, steps, status, stop_reason"
) -> dict[str, Any]:
    with deps.db.transaction(ORG) as cur:
        return fetch_one(
            cur,
            f"SELECT {columns} FROM sequence_enrollments WHERE contact_id = %s",
            (contact_id,),
        )


def test_a_contact_walks_its_three_steps_each_knowing_the_last(
    deps: Deps, smtp: SmtpServer
) -> None:
    first = drafted(deps, contacts=1)[0]
    contact = first["contact"]
    assert enrollment(deps, contact) == {
        "step": 1,
        "steps": 3,
        "status": "active",
        "stop_reason": None,
    }
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    assert tasks(deps, SEQUENCE_QUEUE) == {}  # nothing is due before step 1 is sent
    (sent,) = run_tasks(deps, SEND_QUEUE)
    assert sent["status"] == "sent" and sent["next_step"] == 2
    (task,) = tasks(deps, SEQUENCE_QUEUE).values()
    assert task.delay_seconds == 3 * DAY  # the library's delay (no timezone known)

    seen = deps.llm.chat
    assert isinstance(seen, SeenModel)
    before = len(seen.requests)
    assert run_tasks(deps, SEQUENCE_QUEUE) == [{"handed_to": "AGT-005", "step": 2}]
    (second,) = pending(deps, step=2)
    assert second["contact"] == contact and second["payload"]["sequence_step"] == 2
    (request,) = seen.requests[before:]
    prompt = "\n".join(m.content for m in request.messages)
    assert first["payload"]["subject"] in prompt  # step 2 knows what step 1 said
    assert "Sequence step: 2" in prompt
    assert enrollment(deps, contact)["step"] == 2

    approval.decide(deps, ORG, second["id"], "approve", actor=PERSON)
    assert run_tasks(deps, SEND_QUEUE)[0]["next_step"] == 3
    (task,) = tasks(deps, SEQUENCE_QUEUE).values()
    assert task.delay_seconds == 5 * DAY
    run_tasks(deps, SEQUENCE_QUEUE)
    (third,) = pending(deps, step=3)
    approval.decide(deps, ORG, third["id"], "approve", actor=PERSON)
    assert run_tasks(deps, SEND_QUEUE)[0]["sequence"] == "completed"
    assert tasks(deps, SEQUENCE_QUEUE) == {}
    assert enrollment(deps, contact)["status"] == "completed"

    one, two, three = (m.message for m in smtp.received)
    assert "In-Reply-To" not in one
    assert two["In-Reply-To"] == one["Message-ID"]
    assert three["In-Reply-To"] == two["Message-ID"]
    assert three["References"].split() == [one["Message-ID"], two["Message-ID"]]


@pytest.mark.parametrize("event", ["replied", "bounced", "complained", "unsubscribed"])
def test_a_stop_holds_for_the_task_already_scheduled(
    deps: Deps, smtp: SmtpServer, event: str
) -> None:
    first = drafted(deps, contacts=1)[0]
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    (sent,) = run_tasks(deps, SEND_QUEUE)
    assert len(tasks(deps, SEQUENCE_QUEUE)) == 1  # step 2 is already scheduled
    if event == "unsubscribed":
        link = smtp.received[0].message["List-Unsubscribe"].strip("<>")
        token = parse_qs(urlparse(link).query)["t"][0]
        sending.unsubscribe(deps, token, FIXED_NOW)
    else:
        delivery.record(deps, ORG, sent["outbox_id"], event, f"evt-{event}")  # type: ignore[arg-type]
    assert enrollment(deps, first["contact"])["stop_reason"] == event
    (skipped,) = run_tasks(deps, SEQUENCE_QUEUE)
    assert skipped == {"skipped": f"sequence stopped: {event}", "step": 2}
    assert pending(deps, step=2) == []
    assert len(smtp.received) == 1


def test_a_stop_after_step_two_was_drafted_keeps_it_from_being_sent(
    deps: Deps, smtp: SmtpServer
) -> None:
    first = drafted(deps, contacts=1)[0]
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    (sent,) = run_tasks(deps, SEND_QUEUE)
    run_tasks(deps, SEQUENCE_QUEUE)
    (second,) = pending(deps, step=2)
    approval.decide(deps, ORG, second["id"], "approve", actor=PERSON)  # queued, not yet sent
    delivery.record(deps, ORG, sent["outbox_id"], "replied", "evt-reply")
    (result,) = run_tasks(deps, SEND_QUEUE)
    assert result["status"] == "suppressed" and result["reason"] == "sequence stopped: replied"
    assert len(smtp.received) == 1


def test_a_rejected_step_stops_the_sequence(deps: Deps) -> None:
    first = drafted(deps, contacts=1)[0]
    approval.decide(deps, ORG, first["id"], "reject", actor=PERSON, reason="not this one")
    assert enrollment(deps, first["contact"])["stop_reason"] == "rejected"


def test_one_approval_covers_the_sequence_when_the_org_says_so(
    deps: Deps, smtp: SmtpServer
) -> None:
    with deps.db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO org_settings (org_id, sequence_approval) VALUES (%s, 'once')"
            " ON CONFLICT (org_id) DO UPDATE SET sequence_approval = 'once'",  # the demo's row
            (ORG,),
        )
    first = drafted(deps, contacts=1)[0]
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    run_tasks(deps, SEND_QUEUE)
    run_tasks(deps, SEQUENCE_QUEUE)
    assert pending(deps, step=2) == []  # approved on the person's behalf, not left waiting
    (sent,) = run_tasks(deps, SEND_QUEUE)
    assert sent["status"] == "sent"
    with deps.db.transaction(ORG) as cur:
        decisions = fetch_all(
            cur,
            "SELECT actor, channel FROM audit_log WHERE event = 'decision' ORDER BY id",
        )
    assert decisions == [
        {"actor": "user_founder", "channel": "ui"},
        {"actor": "user_founder", "channel": "sequence"},
    ]
    assert len(smtp.received) == 2


def test_each_step_waits_for_a_person_by_default(deps: Deps) -> None:
    first = drafted(deps, contacts=1)[0]
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    run_tasks(deps, SEND_QUEUE)
    run_tasks(deps, SEQUENCE_QUEUE)
    assert len(pending(deps, step=2)) == 1
    assert tasks(deps, SEND_QUEUE) == {}


def test_duplicate_and_forged_step_events_draft_nothing(deps: Deps) -> None:
    first = drafted(deps, contacts=2)
    a, b = first
    approval.decide(deps, ORG, a["id"], "approve", actor=PERSON)
    run_tasks(deps, SEND_QUEUE)
    campaign_id = a["payload"]["campaign_id"]
    step2 = SequenceStep(org_id=ORG, campaign_id=campaign_id, contact_id=a["contact"], step=2)
    for attempt in range(3):  # the same step delivered as three different events
        message_generator.write_message(deps, step2, f"evt-{attempt}")
    assert len(pending(deps, step=2)) == 1
    # step 2 of a contact whose step 1 was never sent (b awaits its approval) is refused
    forged = SequenceStep(org_id=ORG, campaign_id=campaign_id, contact_id=b["contact"], step=2)
    with pytest.raises(HandoffRefused, match="not been sent"):
        message_generator.write_message(deps, forged, "evt-forged")
    # skipping ahead is refused: step 3 before step 2 was sent, or before it was drafted
    ahead = SequenceStep(org_id=ORG, campaign_id=campaign_id, contact_id=a["contact"], step=3)
    with pytest.raises(HandoffRefused, match="step 2 of this sequence has not been sent"):
        message_generator.write_message(deps, ahead, "evt-ahead")
    skip = SequenceStep(org_id=ORG, campaign_id=campaign_id, contact_id=b["contact"], step=3)
    with pytest.raises(HandoffRefused, match="step 2 of this sequence has not been drafted"):
        sequences.due(deps, skip)
    assert len(pending(deps, step=2)) == 1 and pending(deps, step=3) == []


def test_the_next_step_lands_in_the_contacts_business_hours(deps: Deps) -> None:
    first = drafted(deps, contacts=1)[0]
    with deps.db.transaction(ORG) as cur:
        cur.execute(
            "UPDATE contacts SET timezone = 'America/Los_Angeles' WHERE id = %s",
            (first["contact"],),
        )
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    run_tasks(deps, SEND_QUEUE)
    (task,) = tasks(deps, SEQUENCE_QUEUE).values()
    # sent Monday 09:00 UTC (01:00 in Los Angeles); 3 days later is Thursday 01:00 there,
    # so it waits for 09:00 Pacific: 17:00 UTC
    due = datetime(2026, 12, 3, 17, 0, tzinfo=UTC)
    assert task.delay_seconds == (due - FIXED_NOW).total_seconds()


@pytest.mark.parametrize(
    ("at", "tz", "expected"),
    [
        (datetime(2026, 12, 2, 15, 0, tzinfo=UTC), "Europe/London", "2026-12-02T15:00:00+00:00"),
        (datetime(2026, 12, 2, 18, 0, tzinfo=UTC), "Europe/London", "2026-12-03T09:00:00+00:00"),
        (datetime(2026, 12, 5, 10, 0, tzinfo=UTC), "Europe/London", "2026-12-07T09:00:00+00:00"),
        (datetime(2026, 12, 4, 23, 0, tzinfo=UTC), "Asia/Tokyo", "2026-12-07T00:00:00+00:00"),
        (datetime(2026, 12, 5, 10, 0, tzinfo=UTC), None, "2026-12-05T10:00:00+00:00"),
        (datetime(2026, 12, 5, 10, 0, tzinfo=UTC), "Mars/Olympus", "2026-12-05T10:00:00+00:00"),
    ],
)
def test_business_hours(at: datetime, tz: str | None, expected: str) -> None:
    assert in_business_hours(at, tz).isoformat() == expected


def test_a_new_campaign_skips_a_suppressed_contact_before_any_work(
    deps: Deps, smtp: SmtpServer
) -> None:
    first = drafted(deps, contacts=1)[0]
    approval.decide(deps, ORG, first["id"], "approve", actor=PERSON)
    run_tasks(deps, SEND_QUEUE)
    link = smtp.received[0].message["List-Unsubscribe"].strip("<>")
    sending.unsubscribe(deps, parse_qs(urlparse(link).query)["t"][0], FIXED_NOW)
    seen = deps.llm.chat
    assert isinstance(seen, SeenModel)
    calls = len(seen.requests)
    wave = campaign.create_campaign(
        deps, ORG, name="Second wave", angle="Signal", tier="T1", contact_ids=[first["contact"]]
    )
    run_id = campaign.launch(deps, ORG, wave)
    assert not run_until_idle(deps, deps.transport).rejected
    with deps.db.transaction(ORG) as cur:
        run = fetch_one(cur, "SELECT status FROM campaign_runs WHERE id = %s", (run_id,))
        steps = fetch_all(
            cur, "SELECT step_key, output FROM run_steps WHERE run_id = %s", (run_id,)
        )
    assert run["status"] == "completed"
    done = [s["output"]["outcome"] for s in steps if s["step_key"].startswith("done:")]
    assert done == ["suppressed"]
    assert len(seen.requests) == calls  # no model call for someone who asked not to hear


def test_a_prospects_own_site_and_address_are_not_flagged_as_planted(deps: Deps) -> None:
    """Their enrichment quotes their company site and their record their address: neither is
    an instruction someone planted (the flags that do matter: tests/test_hostile_model.py)."""
    drafts = drafted(deps, contacts=6)
    assert [d["payload"].get("untrusted_instructions") for d in drafts] == [None] * 6
