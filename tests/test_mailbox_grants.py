"""An org's own Google Workspace and Microsoft 365 mailboxes (issue 39 item 2) below HTTP:
the real adapters (httpx) against the Gmail and Graph stand-ins, which relay what they accept
into the real SMTP server; the real PostgreSQL; the local secret store.

A mailbox is connected only by a grant for its own address (another account's grant is
refused, given back, audited); its tokens are refreshed near their expiry; messages go from
it, a follow-up into the first one's Gmail thread; a revoked grant makes the message wait
(recorded on its row and the audit log, nothing lost) until an admin connects it again,
when what waited goes; another org's state never connects anything."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import httpx
import pytest
from pydantic import SecretStr

from colony.adapters.embedding import OfflineHashEmbedder
from colony.contracts.mailboxes import MailboxCallback
from colony.errors import Forbidden, NotFound
from colony.flows.approvals import approval_queue
from colony.flows.outbound import mailbox_grants, mailboxes
from colony.knowledge import KnowledgeStore
from colony.testing.mail_accounts import redirect_code
from tests.mailbox_world import ACME, DOMAIN, RIVAL, RIVAL_DOMAIN, SECOND, MailWorld, mail_world

__all__ = ["mail_world"]
pytestmark = pytest.mark.covers("ENT-012", "fn:send", "fn:admin")

ADA, BOB = f"ada@{DOMAIN}", f"bob@{SECOND}"


def _consent(w: MailWorld, org: str, mailbox_id: str, user: str = "user_ada") -> MailboxCallback:
    """The admin starts, the person consents at the stand-in: what its redirect carries."""
    started = mailbox_grants.start(w.deps, w.deps.mailbox_apis, org, mailbox_id, user)
    answer = httpx.get(started["authorize_url"], follow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    code, state = redirect_code(answer.headers["location"])
    return MailboxCallback(code=SecretStr(code), state=SecretStr(state))


def _complete(
    w: MailWorld, org: str, mailbox_id: str, body: MailboxCallback, user: str = "user_ada"
) -> dict[str, object]:
    return mailbox_grants.complete(
        w.deps, w.secrets, w.deps.mailbox_apis, org, mailbox_id, user, body
    )


def _gmail_mailbox(w: MailWorld) -> str:
    w.gmail.accounts.host(ADA, BOB)
    return w.mailbox(ACME, ADA, 20, name="Ada Lovelace", kind="gmail")


def test_a_gmail_mailbox_sends_through_its_grant_and_threads_its_follow_ups(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    ada = _gmail_mailbox(w)
    (before,) = mailboxes.listing(w.deps, ACME)["mailboxes"]
    assert before["sending"] is False and "not connected" in before["waits_because"]
    assert _complete(w, ACME, ada, _consent(w, ACME, ada))["grant"] == "connected"
    (row,) = w.rows(ACME, "SELECT grant_status, grant_secret FROM sender_mailboxes")
    assert row["grant_status"] == "connected"
    assert "refresh_token" in w.secrets.get(row["grant_secret"])  # the store, not the DB
    campaign = w.campaign(ACME)
    dana = w.contact(ACME, "dana@gp.example")
    first = w.send(ACME, w.message(ACME, dana, campaign=campaign))
    assert first["status"] == "sent" and first["message_id"].endswith(f"@{DOMAIN}>")
    w.now[0] += timedelta(days=2)  # past the access token's hour: refreshed first
    second = w.send(ACME, w.message(ACME, dana, campaign=campaign, step=2))
    assert second["status"] == "sent"
    refreshes = [
        r for r in w.gmail.requests_to("google.token") if b"grant_type=refresh_token" in r.raw_body
    ]
    assert len(refreshes) == 1
    sent = w.gmail.sent
    assert [s.mailbox for s in sent] == [ADA, ADA]
    assert sent[1].thread == sent[0].thread == w.outbox(ACME, first["outbox_id"])["provider_thread"]
    sends = w.gmail.requests_to("gmail.messages.send")
    assert "threadId" not in sends[0].body and sends[1].body["threadId"] == sent[0].thread
    # relayed as Gmail would: the exact message, our Message-ID and threading headers
    assert [r.message["Message-ID"] for r in w.smtp.received] == [
        first["message_id"],
        second["message_id"],
    ]
    assert w.smtp.received[1].message["In-Reply-To"] == first["message_id"]
    assert str(w.smtp.received[0].message["From"]) == f"Ada Lovelace <{ADA}>"
    assert "DKIM-Signature" not in w.smtp.received[0].message  # Google signs, not us


def test_a_grant_for_another_account_is_refused_and_given_back(mail_world: MailWorld) -> None:
    w = mail_world
    ada = _gmail_mailbox(w)
    w.gmail.accounts.sign_in_as = BOB  # the person signs in as someone else
    with pytest.raises(Forbidden, match="another account"):
        _complete(w, ACME, ada, _consent(w, ACME, ada))
    assert w.rows(ACME, "SELECT grant_status FROM sender_mailboxes") == [{"grant_status": "none"}]
    assert len(w.gmail.requests_to("google.revoke")) == 1  # the stray grant went straight back
    assert ("refusal", "mailbox.connect", "another_account") in w.audit(ACME)
    root = w.secrets_root
    assert not any(p.name.startswith("colony-mailbox-") for p in root.glob("*"))


def test_another_orgs_state_or_mailbox_connects_nothing(mail_world: MailWorld) -> None:
    w = mail_world
    ada = _gmail_mailbox(w)
    w.gmail.accounts.host(f"mal@{RIVAL_DOMAIN}")
    mal = w.mailbox(RIVAL, f"mal@{RIVAL_DOMAIN}", 5, name="Mal", kind="gmail")
    stolen = _consent(w, ACME, ada)
    with pytest.raises(Forbidden):  # ACME's state, spent under RIVAL's scope: not found
        _complete(w, RIVAL, mal, stolen, user="user_mallory")
    with pytest.raises(NotFound):  # and RIVAL cannot name ACME's mailbox at all
        mailbox_grants.start(w.deps, w.deps.mailbox_apis, RIVAL, ada, "user_mallory")
    assert ("refusal", "mailbox.connect", "unknown_state") in w.audit(RIVAL)
    # the state is still ACME's to spend, by the person who began it
    assert _complete(w, ACME, ada, stolen)["grant"] == "connected"
    with pytest.raises(Forbidden):  # once
        _complete(w, ACME, ada, stolen)


def test_a_revoked_grant_waits_on_the_record_and_resumes_when_reconnected(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    ada = _gmail_mailbox(w)
    _complete(w, ACME, ada, _consent(w, ACME, ada))
    w.gmail.accounts.revoke(ADA)  # the owner removed the app in their Google account
    outbox_id = w.message(ACME, w.contact(ACME, "dana@gp.example"))
    waiting = w.send(ACME, outbox_id)
    assert waiting["status"] == "deferred" and "grant" in waiting["reason"]
    row = w.outbox(ACME, outbox_id)
    assert row["status"] == "queued" and "connect it again" in row["wait_reason"]
    assert row["send_day"] is None  # not counted against today's limit
    (shown,) = mailboxes.listing(w.deps, ACME)["mailboxes"]
    assert shown["grant"]["status"] == "revoked" and shown["sending"] is False
    assert ("effect", "mailbox.grant_revoked", shown["grant"]["reason"]) in w.audit(ACME)
    assert w.smtp.received == [] and w.gmail.sent == []
    # a later attempt waits too, and says why, without asking Google again
    calls = len(w.gmail.requests)
    again = w.send(ACME, outbox_id)
    assert again["status"] == "deferred" and "revoked" in again["reason"]
    assert len(w.gmail.requests) == calls
    # connected again: what waited is handed back to the queue, and goes
    done = _complete(w, ACME, ada, _consent(w, ACME, ada))
    assert done["resumed"] == 1
    assert any(
        t.task_id.startswith(f"send-{outbox_id}-connected-") for t in w.transport.tasks.values()
    )
    assert w.send(ACME, outbox_id)["status"] == "sent"
    assert [s.mailbox for s in w.gmail.sent] == [ADA]


def test_a_first_message_whose_mailbox_lost_its_grant_goes_from_another(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    ada = _gmail_mailbox(w)  # 20 a day: the most room, so rotation picks it
    _complete(w, ACME, ada, _consent(w, ACME, ada))
    w.mailbox(ACME, BOB, 5, name="Bob")  # a relay mailbox on the other domain
    w.gmail.accounts.revoke(ADA)
    w.gmail.accounts.expire_access()
    outbox_id = w.message(ACME, w.contact(ACME, "dana@gp.example"))
    waiting = w.send(ACME, outbox_id)
    assert waiting["status"] == "deferred" and "grant" in waiting["reason"]
    assert w.outbox(ACME, outbox_id)["mailbox_id"] is None  # it did not leave: unbound
    sent = w.send(ACME, outbox_id)  # its retry: ada cannot send, bob can
    assert sent["status"] == "sent" and sent["message_id"].endswith(f"@{SECOND}>")
    (got,) = w.smtp.received
    assert got.mail_from == BOB and got.dkim is True
    assert w.gmail.sent == []


def test_a_pending_cards_says_which_mailbox_and_why_its_send_would_wait(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    ada = _gmail_mailbox(w)
    _complete(w, ACME, ada, _consent(w, ACME, ada))
    campaign = w.campaign(ACME)
    dana = w.contact(ACME, "dana@gp.example")
    assert w.send(ACME, w.message(ACME, dana, campaign=campaign))["status"] == "sent"
    payload = {
        "subject": "Re: Lease costs",
        "body": "A follow-up.",
        "campaign_id": campaign,
        "contact_id": dana,
        "sequence_step": 2,
        "channel": "email",
    }
    with w.deps.db.transaction(ACME) as cur:
        cur.execute(
            "INSERT INTO approval_items (org_id, kind, source_agent, subject_id, payload)"
            " VALUES (%s, 'outbound_message', 'AGT-005', %s, %s::jsonb) RETURNING id",
            (ACME, dana, json.dumps(payload)),
        )
        item = cur.fetchone()[0]
    # the /overview queue's cards (their CONST checks read KC-06 through the Knowledge Core)
    deps = dataclasses.replace(
        w.deps, knowledge_store=KnowledgeStore(w.deps.db, OfflineHashEmbedder(dim=w.testdb.dim))
    )
    cards = approval_queue.pending_cards(deps, ACME, detail=True)["items"]
    (card,) = [c for c in cards if c["id"] == item]
    assert card["detail"]["sender"] == {"from": ADA, "sending": True, "waits_because": None}
    w.gmail.accounts.revoke(ADA)
    w.now[0] += timedelta(hours=2)  # the access token lapsed: the next send refreshes, refused
    waiting = w.send(ACME, w.message(ACME, w.contact(ACME, "erin@gp.example")))
    assert waiting["status"] == "deferred"
    cards = approval_queue.pending_cards(deps, ACME, detail=True)["items"]
    (card,) = [c for c in cards if c["id"] == item]
    sender = card["detail"]["sender"]
    assert sender["from"] == ADA and sender["sending"] is False
    assert "revoked" in sender["waits_because"] and "connect it again" in sender["waits_because"]


def test_a_graph_mailbox_sends_mime_and_threads_by_its_headers(mail_world: MailWorld) -> None:
    w = mail_world
    w.graph.accounts.host(BOB)
    bob = w.mailbox(ACME, BOB, 10, name="Bob", kind="graph")
    _complete(w, ACME, bob, _consent(w, ACME, bob))
    campaign = w.campaign(ACME)
    dana = w.contact(ACME, "dana@gp.example")
    first = w.send(ACME, w.message(ACME, dana, campaign=campaign))
    second = w.send(ACME, w.message(ACME, dana, campaign=campaign, step=2))
    assert first["status"] == second["status"] == "sent"
    sent = w.graph.sent
    assert [s.mailbox for s in sent] == [BOB, BOB]
    assert w.graph.conversation(sent[1]) == w.graph.conversation(sent[0]) == first["message_id"]
    assert [r.message["Message-ID"] for r in w.smtp.received] == [
        first["message_id"],
        second["message_id"],
    ]


def test_disconnecting_gives_the_grant_back_and_the_mail_waits(mail_world: MailWorld) -> None:
    w = mail_world
    ada = _gmail_mailbox(w)
    _complete(w, ACME, ada, _consent(w, ACME, ada))
    (secret,) = w.rows(ACME, "SELECT grant_secret FROM sender_mailboxes")
    stopped = mailbox_grants.disconnect(
        w.deps, w.secrets, w.deps.mailbox_apis, ACME, ada, "user_ada"
    )
    assert stopped["grant"] == "none" and len(w.gmail.requests_to("google.revoke")) == 1
    with pytest.raises(NotFound):
        w.secrets.get(secret["grant_secret"])
    waiting = w.send(ACME, w.message(ACME, w.contact(ACME, "dana@gp.example")))
    assert waiting["status"] == "deferred"
