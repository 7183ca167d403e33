"""Sending approved messages (issue 18): real PostgreSQL, a real SMTP server (aiosmtpd) and
the real SMTP adapter; a message goes from its approval to the server once, carries its
unsubscribe headers, and never reaches a suppressed address."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.smtp import SmtpSender
from colony.errors import ConfigError, Unauthorized, UpstreamError
from colony.flows.approvals import approval
from colony.flows.outbound import delivery, sending
from colony.knowledge import KnowledgeStore
from colony.ports import Mail
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.store.campaigns import campaigns
from colony.store.outbound import postal_address, suppressions
from colony.testing.inline import InlineTransport, fixed_clock, local_deps
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("ENT-012", "fn:send")

ORG = "org_zoomprop_demo"
PERSON = approval.Actor("user_founder", "ui")
SETTINGS = {
    "COLONY_MAIL_FROM": "ZoomProp <outreach@zoomprop.example>",
    "COLONY_UNSUBSCRIBE_URL": "https://colony.example/unsubscribe",
    "COLONY_UNSUBSCRIBE_TOKEN_KEY": "u" * 40,
}
POSTAL = "ZoomProp Inc., 100 Congress Ave, Austin, TX 78701"


@pytest.fixture
def deps(testdb: PgDB, smtp: SmtpServer) -> Deps:
    db = testdb.app()
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'ZoomProp')", (ORG,))
        postal_address.set_address(cur, ORG, POSTAL)  # campaign email needs one (issue 39)
    sender = SmtpSender(smtp.host, smtp.port, starttls=False, timeout=10)
    # approving a message makes it a KC-08 exemplar: the Knowledge Core is a real part here
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    return local_deps(
        Settings.from_env(SETTINGS), db, InlineTransport(), knowledge=knowledge, sender=sender
    )


def approved_message(
    deps: Deps, email: str, subject: str = "Lease costs", campaign_id: str | None = None
) -> str:
    """An outbound message for a new contact at ``email``, approved by a person; its outbox id."""
    with deps.db.transaction(ORG) as cur:
        contact = fetch_one(
            cur,
            "INSERT INTO contacts (org_id, name, email, company) VALUES (%s, 'Dana', %s, 'GP')"
            " RETURNING id",
            (ORG, email),
        )["id"]
        payload = {
            "subject": subject,
            "body": "Hi Dana,\nA thought on utilisation.",
            "contact_id": contact,
        }
        if campaign_id:
            payload["campaign_id"] = campaign_id
        item = fetch_one(
            cur,
            "INSERT INTO approval_items (org_id, kind, source_agent, payload)"
            " VALUES (%s, 'outbound_message', 'AGT-005', %s::jsonb) RETURNING id",
            (ORG, json.dumps(payload)),
        )["id"]
    approval.decide(deps, ORG, item, "approve", actor=PERSON)
    with deps.db.transaction(ORG) as cur:
        return fetch_one(cur, "SELECT id FROM outbox WHERE approval_item_id = %s", (item,))["id"]


def outbox_row(deps: Deps, outbox_id: str) -> dict[str, Any]:
    with deps.db.transaction(ORG) as cur:
        return fetch_one(
            cur,
            "SELECT status, message_id, to_address, sent_at, send_error FROM outbox WHERE id = %s",
            (outbox_id,),
        )


def test_an_approved_message_is_sent_once_with_its_unsubscribe_headers(
    deps: Deps, smtp: SmtpServer
) -> None:
    outbox_id = approved_message(deps, "Dana@GranitePeak.example")
    results = [sending.send(deps, ORG, outbox_id) for _ in range(3)]  # a task delivered 3×
    assert results[0] == {
        "outbox_id": outbox_id,
        "status": "sent",
        "message_id": f"<{outbox_id}@zoomprop.example>",
    }
    assert [r.get("duplicate") for r in results[1:]] == [True, True]
    (got,) = smtp.received
    assert got.rcpt_tos == ("dana@granitepeak.example",)
    message = got.message
    assert message["Message-ID"] == f"<{outbox_id}@zoomprop.example>"
    assert message["From"] == "ZoomProp <outreach@zoomprop.example>"
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    link = message["List-Unsubscribe"].strip("<>")
    assert link.startswith("https://colony.example/unsubscribe?t=")
    assert link in message.get_content()  # the footer carries the same link
    assert f"\r\n--\r\n{POSTAL}\r\nTo stop receiving" in message.get_content()  # its address
    row = outbox_row(deps, outbox_id)
    assert row["status"] == "sent" and row["sent_at"] is not None
    with deps.db.transaction(ORG) as cur:
        effects = fetch_all(cur, "SELECT action FROM audit_log WHERE event = 'effect' ORDER BY id")
    assert [e["action"] for e in effects] == ["message_queued", "message_sent"]

    # the link unsubscribes the address: the next message to it is never sent
    token = parse_qs(urlparse(link).query)["t"][0]
    assert sending.unsubscribe(deps, token, fixed_clock()) == {"unsubscribed": True, "stopped": 0}
    later = approved_message(deps, "dana@granitepeak.example", "Second thought")
    assert sending.send(deps, ORG, later)["status"] == "suppressed"
    assert len(smtp.received) == 1
    # a queued message to an address that unsubscribes is stopped before it leaves
    queued = approved_message(deps, "lee@granitepeak.example")
    lee = sending.unsubscribe_link(deps, ORG, "lee@granitepeak.example")
    stopped = sending.unsubscribe(deps, parse_qs(urlparse(lee).query)["t"][0], fixed_clock())
    assert stopped == {"unsubscribed": True, "stopped": 1}
    assert outbox_row(deps, queued)["status"] == "suppressed"
    assert sending.send(deps, ORG, queued)["duplicate"] is True
    assert len(smtp.received) == 1


def test_unsubscribe_links_that_are_forged_or_expired_are_refused(deps: Deps) -> None:
    link = sending.unsubscribe_link(deps, ORG, "dana@granitepeak.example")
    token = parse_qs(urlparse(link).query)["t"][0]
    with pytest.raises(Unauthorized, match="signature"):
        sending.unsubscribe(deps, token[:-2] + "xx", fixed_clock())
    with pytest.raises(Unauthorized, match="expired"):
        sending.unsubscribe(deps, token, fixed_clock() + timedelta(days=sending.UNSUBSCRIBE_DAYS))
    with deps.db.transaction(ORG) as cur:
        assert fetch_all(cur, "SELECT address FROM suppressions") == []


def test_refusals_bounces_and_complaints_suppress_and_retries_reuse_the_message_id(
    deps: Deps, smtp: SmtpServer
) -> None:
    # a permanent refusal: bounced, and the address suppressed; its codes kept, not its text
    hard = approved_message(deps, "bounce-me@granitepeak.example")
    assert sending.send(deps, ORG, hard)["status"] == "bounced"
    assert outbox_row(deps, hard)["send_error"] == "hard bounce (550 5.1.1 bad_mailbox)"
    # a transient one: back in the queue, tried again later (tests/test_deliverability.py)
    soft = approved_message(deps, "defer-me@granitepeak.example")
    assert sending.send(deps, ORG, soft)["status"] == "deferred"
    assert outbox_row(deps, soft)["status"] == "queued"
    # a server that cannot be reached: the row stays 'sending' under its lease; a duplicate
    # waits
    unreachable = approved_message(deps, "lee@granitepeak.example")
    down = dataclasses.replace(deps, mail_sender=SmtpSender("127.0.0.1", 9, starttls=False))
    with pytest.raises(UpstreamError, match="cannot reach"):
        sending.send(down, ORG, unreachable)
    assert outbox_row(deps, unreachable)["status"] == "sending"
    with pytest.raises(sending.SendInProgress):
        sending.send(deps, ORG, unreachable)
    # the crash window: the server accepted, we died before recording it
    crash = approved_message(deps, "kim@granitepeak.example")
    real = deps.sender

    class AcceptedThenCrashed:
        def send(self, mail: Mail) -> None:
            real.send(mail)
            raise UpstreamError("the function instance died after the server accepted")

    crashing = dataclasses.replace(deps, mail_sender=AcceptedThenCrashed())
    with pytest.raises(UpstreamError):
        sending.send(crashing, ORG, crash)
    with deps.db.transaction(ORG) as cur:  # the lease lapses (as it would after 5 minutes)
        cur.execute(
            "UPDATE outbox SET send_lease_until = now() - interval '1 second' WHERE id = %s",
            (crash,),
        )
    assert sending.send(deps, ORG, crash)["status"] == "sent"
    ids = [r.message["Message-ID"] for r in smtp.received]
    assert ids == [f"<{crash}@zoomprop.example>"] * 2  # the same message, twice: the window
    # a complaint reported by the provider suppresses the address too
    delivery.record(deps, ORG, crash, "complained", "esp-evt-1")
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(cur, "SELECT address, reason FROM suppressions ORDER BY reason")
    assert [r["reason"] for r in rows] == ["bounced", "complained"]
    assert not any("@" in r["address"] for r in rows)  # a digest, never the address
    with deps.db.transaction(ORG) as cur:
        assert suppressions.reason_for(cur, "Kim@GranitePeak.example") == "complained"
        assert suppressions.reason_for(cur, "bounce-me@granitepeak.example") == "bounced"
    again = approved_message(deps, "kim@granitepeak.example")
    assert sending.send(deps, ORG, again)["status"] == "suppressed"
    assert len(smtp.received) == 2


@pytest.mark.covers("CONST-005")
def test_the_breaker_rates_bounces_against_every_message_that_left(
    deps: Deps, smtp: SmtpServer
) -> None:
    """An SMTP relay reports no ``delivered`` events: a message it accepted counts as sent in
    the bounce rate, or a few replies next to the hard bounces refused at send time look like
    a bounce storm and pause a healthy campaign."""
    with deps.db.transaction(ORG) as cur:
        campaign_id = campaigns.create(
            cur,
            ORG,
            name="Relay",
            angle="Signal",
            tier="T1",
            bounce_threshold=0.25,
            complaint_threshold=0.003,
        )
    addresses = [f"bounce-{i}@h{i}.example" for i in range(4)]  # 4 of 20 refused: 20%
    addresses += [f"p{i}@h{i}.example" for i in range(4, 20)]
    sent = [approved_message(deps, a, campaign_id=campaign_id) for a in addresses]
    results = [sending.send(deps, ORG, outbox_id)["status"] for outbox_id in sent]
    assert results == ["bounced"] * 4 + ["sent"] * 16
    replies = [
        delivery.record(deps, ORG, outbox_id, "replied", f"evt-reply-{n}")
        for n, outbox_id in enumerate(sent[4:10])
    ]
    assert replies[-1]["bounce_rate"] == 0.2  # 4 of the 20 that left, not 4 of 10 judged
    assert not any(r.get("paused") for r in replies)
    with deps.db.transaction(ORG) as cur:
        status = fetch_one(cur, "SELECT status FROM campaigns WHERE id = %s", (campaign_id,))
    assert status["status"] == "active"


def test_a_missing_setting_refuses_before_the_message_is_claimed(deps: Deps) -> None:
    """A ConfigError after the claim would hold the message under its lease for nothing."""
    outbox_id = approved_message(deps, "dana@granitepeak.example")
    for missing in ("COLONY_UNSUBSCRIBE_TOKEN_KEY", "COLONY_UNSUBSCRIBE_URL"):
        settings = Settings.from_env({k: v for k, v in SETTINGS.items() if k != missing})
        with pytest.raises(ConfigError, match=missing):
            sending.send(dataclasses.replace(deps, settings=settings), ORG, outbox_id)
    unset = dataclasses.replace(deps, mail_sender=None)  # no relay configured
    with pytest.raises(ConfigError, match="this function is not composed with 'sender'"):
        sending.send(unset, ORG, outbox_id)
    assert outbox_row(deps, outbox_id)["status"] == "queued"
    assert sending.send(deps, ORG, outbox_id)["status"] == "sent"  # and it still goes


def test_caps_defer_and_never_drop(deps: Deps, smtp: SmtpServer) -> None:
    """The org's daily cap and its per-recipient-domain hourly cap (org settings) put a
    message back in the queue with a send task for later: deferred, never dropped."""
    with deps.db.transaction(ORG) as cur:
        cur.execute(
            "UPDATE org_settings SET daily_send_cap = 2, per_domain_hourly_cap = 1"
            " WHERE org_id = %s",
            (ORG,),
        )
    first = approved_message(deps, "ann@granitepeak.example")
    same_domain = approved_message(deps, "bo@granitepeak.example")
    other_domain = approved_message(deps, "cy@mercyridge.example")
    over_daily = approved_message(deps, "di@summit.example")
    assert sending.send(deps, ORG, first)["status"] == "sent"
    held = sending.send(deps, ORG, same_domain)
    assert held["status"] == "deferred" and "an hour to this domain" in held["reason"]
    assert sending.send(deps, ORG, other_domain)["status"] == "sent"
    late = sending.send(deps, ORG, over_daily)
    assert late["status"] == "deferred" and "daily cap of 2" in late["reason"]
    assert [r.rcpt_tos for r in smtp.received] == [
        ("ann@granitepeak.example",),
        ("cy@mercyridge.example",),
    ]
    for outbox_id, delay in ((same_domain, sending.DOMAIN_RETRY_SECONDS), (over_daily, None)):
        assert outbox_row(deps, outbox_id)["status"] == "queued"  # back in the queue
        (later,) = [
            t for t in deps.transport.tasks.values() if t.task_id.startswith(f"send-{outbox_id}-")
        ]
        assert "-deferred-" in later.task_id
        if delay is not None:
            assert later.delay_seconds == delay
        else:  # the next UTC day: the fixed clock says 09:00, so 15 hours
            assert later.delay_seconds == 15 * 3600
