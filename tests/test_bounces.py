"""Bounces as their codes say (issue 39 item 4): the classification on its own, then the send
path on real PostgreSQL against the real SMTP server answering scripted codes per recipient
(421 / 451 retried with back-off, 452 4.2.2 exhausted into a suppression, 550 5.1.1 and
5.7.1 suppressed at once), a provider's transient reports counted until the address is
suppressed, and bounces returned by mail (DSNs, read over IMAP from the stand-in) filed by
their codes, never as replies. Only codes are kept, never a server's words."""

from __future__ import annotations

from datetime import timedelta

import pytest

from colony.adapters.imap_mailbox import ImapMailbox, inbound
from colony.flows.outbound import delivery, replies, sending
from colony.policy import bounces
from colony.ports import DeliveryReport
from colony.registry.functions import SEND_QUEUE
from colony.runtime.deps import Deps
from colony.store import fetch_all, fetch_one
from colony.store.outbound import suppressions
from colony.testing.imap_server import ImapServer
from colony.testing.smtp_server import SmtpServer
from tests.test_sending import ORG, approved_message, outbox_row
from tests.test_sending import deps as deps  # the fixture: an org with a postal address

pytestmark = pytest.mark.covers("ENT-012", "fn:send")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("550 5.1.1 <ann@x.example>: no such user", ("permanent", "bad_mailbox", 550, "5.1.1")),
        ("smtp; 550 5.7.1 message refused", ("permanent", "policy", 550, "5.7.1")),
        ("452 4.2.2 mailbox full", ("transient", "mailbox_full", 452, "4.2.2")),
        ("552 5.2.2 mailbox full", ("permanent", "mailbox_full", 552, "5.2.2")),
        ("421 4.7.0 try again later", ("transient", "policy", 421, "4.7.0")),
        ("451 try later", ("transient", "smtp_reply", 451, None)),
        ("550 mailbox 4.2.2 unavailable", ("permanent", "mailbox_full", 550, "4.2.2")),
        ("v1.2.3 nothing here", ("transient", "reported_unknown", None, None)),
    ],
)
def test_a_refusal_is_classified_by_its_enhanced_status_code_then_its_reply_code(
    reply: str, expected: tuple[str, str, int | None, str | None]
) -> None:
    smtp, status = bounces.parse(reply)
    bounce = bounces.classify(smtp, status)
    assert (bounce.klass, bounce.label, bounce.smtp, bounce.status) == expected


def test_a_providers_word_decides_only_where_there_is_no_code() -> None:
    assert bounces.classify(reported="Permanent").klass == "permanent"
    assert bounces.classify(reported="Undetermined").klass == "transient"
    assert bounces.classify(None, "4.2.2", reported="Permanent").klass == "transient"
    assert bounces.classify(None, "9.9.9").label == "reported_unknown"  # malformed: ignored
    assert [bounces.retry_delay(n) for n in (1, 2, 3, 7, 12)] == [600, 1200, 2400, 21600, 21600]
    assert not bounces.exhausted(4, timedelta(days=2))
    assert bounces.exhausted(5, timedelta(0))
    assert bounces.exhausted(2, timedelta(days=3)) and not bounces.exhausted(1, timedelta(days=9))


def _retries(deps: Deps, outbox_id: str) -> list[float]:
    return [
        t.delay_seconds
        for t in deps.transport.tasks.values()
        if t.queue == SEND_QUEUE and t.task_id.startswith(f"send-{outbox_id}-soft-")
    ]


def _effects(deps: Deps, action: str) -> list[dict[str, object]]:
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(
            cur, "SELECT detail FROM audit_log WHERE action = %s ORDER BY id", (action,)
        )
    return [r["detail"] for r in rows]


def test_a_server_refusing_for_now_is_tried_again_with_back_off_and_the_message_goes_once(
    deps: Deps, smtp: SmtpServer
) -> None:
    smtp.answer("ann@granitepeak.example", "421 4.7.0 try again later", "451 4.3.0 greylisted")
    outbox_id = approved_message(deps, "ann@granitepeak.example")
    first = sending.send(deps, ORG, outbox_id)
    assert first["status"] == "deferred" and first["reason"] == "refused for now (421 4.7.0)"
    assert first["bounce"] == {"code": "421 4.7.0", "class": "transient", "label": "policy"}
    assert outbox_row(deps, outbox_id)["status"] == "queued"  # back in the queue, not lost
    second = sending.send(deps, ORG, outbox_id)  # the retry task, delivered
    assert second["bounce"]["code"] == "451 4.3.0"
    assert sorted(_retries(deps, outbox_id)) == [600, 1200]  # doubling back-off
    assert sending.send(deps, ORG, outbox_id)["status"] == "sent"
    assert smtp.attempts["ann@granitepeak.example"] == 3
    assert [r.rcpt_tos for r in smtp.received] == [("ann@granitepeak.example",)]  # once
    assert sending.send(deps, ORG, outbox_id)["duplicate"] is True
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "SELECT soft_bounces, bounce_status, bounce_class FROM outbox WHERE id = %s",
            (outbox_id,),
        )
        assert suppressions.reason_for(cur, "ann@granitepeak.example") is None
    assert (row["soft_bounces"], row["bounce_status"], row["bounce_class"]) == (
        2,
        "4.3.0",
        "transient",
    )
    tries = _effects(deps, "message_soft_bounced")
    assert [(t["code"], t["tries"]) for t in tries] == [("421 4.7.0", 1), ("451 4.3.0", 2)]
    assert not any("greylisted" in str(t) or "try again" in str(t) for t in tries)  # codes only


def test_an_address_that_keeps_refusing_for_now_is_suppressed_after_five_tries_or_three_days(
    deps: Deps, smtp: SmtpServer
) -> None:
    full = "bo@granitepeak.example"
    smtp.answer(full, *["452 4.2.2 mailbox full"] * 5)
    outbox_id = approved_message(deps, full)
    outcomes = [sending.send(deps, ORG, outbox_id)["status"] for _ in range(5)]
    assert outcomes == ["deferred"] * 4 + ["bounced"]
    row = outbox_row(deps, outbox_id)
    assert row["status"] == "bounced"
    assert row["send_error"] == "soft bounces exhausted (452 4.2.2 mailbox_full)"
    with deps.db.transaction(ORG) as cur:
        assert suppressions.reason_for(cur, full) == "bounced"
    assert smtp.received == []
    (last,) = _effects(deps, "message_bounced")
    assert last["exhausted"] is True and last["code"] == "452 4.2.2"

    # two refusals three days apart: exhausted by time, not count
    slow = "cy@granitepeak.example"
    smtp.answer(slow, "451 4.4.1 no answer from host", "451 4.4.1 no answer from host")
    later = approved_message(deps, slow)
    assert sending.send(deps, ORG, later)["status"] == "deferred"
    with deps.db.transaction(ORG) as cur:  # the refusals began three days ago
        cur.execute(
            "UPDATE outbox SET first_soft_bounce_at = now() - interval '3 days 1 hour'"
            " WHERE id = %s",
            (later,),
        )
    assert sending.send(deps, ORG, later)["status"] == "bounced"
    with deps.db.transaction(ORG) as cur:
        assert suppressions.reason_for(cur, slow) == "bounced"


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("550 5.1.1 no such mailbox", "bad_mailbox"),
        ("550 5.7.1 policy refusal", "policy"),
        ("552 5.2.2 over quota", "mailbox_full"),
    ],
)
def test_a_permanent_refusal_suppresses_at_once_whatever_its_subject(
    deps: Deps, smtp: SmtpServer, reply: str, label: str
) -> None:
    address = "di@summit.example"
    smtp.answer(address, reply)
    outbox_id = approved_message(deps, address)
    result = sending.send(deps, ORG, outbox_id)
    assert result["status"] == "bounced" and result["bounce"]["label"] == label
    assert result["bounce"]["code"] == " ".join(reply.split()[:2])
    with deps.db.transaction(ORG) as cur:
        assert suppressions.reason_for(cur, address) == "bounced"
    assert _retries(deps, outbox_id) == [] and smtp.attempts[address] == 1  # never retried


def test_a_providers_transient_reports_suppress_the_address_once_exhausted(
    deps: Deps, smtp: SmtpServer
) -> None:
    """A provider retries a message itself before it reports a soft bounce: each report
    counts against the address, and the fifth suppresses it (and bounces that message)."""
    address = "eve@mercyridge.example"
    sent = [approved_message(deps, address, f"Note {n}") for n in range(3)]
    for outbox_id in sent:
        assert sending.send(deps, ORG, outbox_id)["status"] == "sent"
    soft = bounces.classify(None, "4.2.2", reported="Transient")
    reports = [
        delivery.record(deps, ORG, sent[n % 3], "bounced", f"evt-soft-{n}", bounce=soft)
        for n in range(5)
    ]
    assert [r.get("soft_bounce", False) for r in reports] == [True] * 4 + [False]
    assert reports[-1]["status"] == "bounced"
    with deps.db.transaction(ORG) as cur:
        assert suppressions.reason_for(cur, address) == "bounced"
    assert [outbox_row(deps, i)["status"] for i in sent] == ["sent", "bounced", "sent"]
    again = approved_message(deps, address, "Later")
    assert sending.send(deps, ORG, again)["status"] == "suppressed"


def dsn(original: str, recipient: str, action: str, status: str, message_id: str) -> bytes:
    """A delivery status notification as an MTA returns one (RFC 3464), with an
    In-Reply-To as some (Exchange) set it: it must still never pass for a reply."""
    text = f"""From: MAILER-DAEMON@mx.granitepeak.example
To: outreach@zoomprop.example
Subject: Undelivered Mail Returned to Sender
Message-ID: {message_id}
In-Reply-To: {original}
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B"

--B
Content-Type: text/plain

I'm sorry to have to inform you that your message to {recipient} could not be delivered.
--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.granitepeak.example

Final-Recipient: rfc822; {recipient}
Action: {action}
Status: {status}
Diagnostic-Code: smtp; {"550" if status.startswith("5") else "452"} {status} <{recipient}>

--B
Content-Type: text/rfc822-headers

Message-ID: {original}
From: ZoomProp <outreach@zoomprop.example>
Subject: Lease costs

--B--
"""
    return text.replace("\n", "\r\n").encode()


def test_a_bounce_returned_by_mail_is_filed_by_its_codes_and_never_as_a_reply(
    deps: Deps, smtp: SmtpServer
) -> None:
    hard, soft = "dana@granitepeak.example", "lee@granitepeak.example"
    sent = {a: approved_message(deps, a) for a in (hard, soft)}
    assert {sending.send(deps, ORG, i)["status"] for i in sent.values()} == {"sent"}
    ids = {a: f"<{i}@zoomprop.example>" for a, i in sent.items()}
    returned = dsn(ids[hard], hard, "failed", "5.1.1", "<dsn-1@mx>")
    report = inbound(returned).report
    assert report == DeliveryReport("failed", "5.1.1", 550, ids[hard])
    with ImapServer() as server:
        server.deliver(returned)
        server.deliver(dsn(ids[soft], soft, "delayed", "4.2.2", "<dsn-2@mx>"))
        server.deliver(dsn("<nobody@zoomprop.example>", hard, "failed", "5.1.1", "<dsn-3@mx>"))
        box = ImapMailbox(
            server.host,
            server.port,
            username=server.username,
            password=server.password,
            tls=False,
            timeout=5,
        )
        counts = replies.poll(deps, deps.rejections, box, ORG)
        assert counts == {"stored": 0, "duplicate": 0, "rejected": 1, "bounce": 2}
        assert server.seen == [1, 2, 3]
    assert outbox_row(deps, sent[hard])["status"] == "bounced"
    assert outbox_row(deps, sent[soft])["status"] == "sent"  # delayed: a soft bounce, counted
    with deps.db.transaction(ORG) as cur:
        assert suppressions.reason_for(cur, hard) == "bounced"
        assert suppressions.reason_for(cur, soft) is None
        assert fetch_all(cur, "SELECT id FROM replies") == []  # never a reply
        kept = fetch_all(
            cur, "SELECT bounce_status, soft_bounces FROM outbox ORDER BY bounce_status"
        )
    assert [(r["bounce_status"], r["soft_bounces"]) for r in kept] == [("4.2.2", 1), ("5.1.1", 0)]
