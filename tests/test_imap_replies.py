"""Replies for SMTP relay users (issue 18 item 5): a polled mailbox. The real adapter
(``colony.adapters.imap_mailbox``, standard library ``imaplib``) over a real TCP socket,
real PostgreSQL and the real reply flow.

Stood in: the IMAP server (``colony.testing.imap_server``, the subset of IMAP4rev1 the
adapter speaks, without TLS). Real: imaplib, the wire exchange, parsing, the flow, the
database."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import format_datetime

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.imap_mailbox import ImapMailbox
from colony.errors import ConfigError, UpstreamError
from colony.flows.outbound import replies, sending
from colony.knowledge import KnowledgeStore
from colony.ports import Mail, Mailbox
from colony.settings import Settings
from colony.store import fetch_all
from colony.testing.imap_server import ImapServer
from colony.testing.inline import FIXED_NOW, InlineTransport, local_deps
from colony.testing.loopback import closed_port
from tests.conftest import PgDB
from tests.test_sending import ORG, SETTINGS, approved_message

OTHER = "org_other"
QUOTED = (
    "Not interested, thanks.\n\n"
    "On Mon, 30 Nov 2026 at 09:00, ZoomProp <outreach@zoomprop.example> wrote:\n"
    "> quoted pitch\n"
)


class Accepting:
    def send(self, mail: Mail) -> None:
        self.last = mail


def reply(in_reply_to: str, text: str, message_id: str) -> bytes:
    message = EmailMessage()
    message["From"] = "Dana <dana@granitepeak.example>"
    message["To"] = "outreach@zoomprop.example"
    message["Subject"] = "Re: Lease costs"
    message["Message-ID"] = message_id
    message["Date"] = format_datetime(FIXED_NOW)
    message["In-Reply-To"] = in_reply_to
    message["References"] = in_reply_to
    message.set_content(text)
    return bytes(message)


def mailbox(server: ImapServer, password: str | None = None) -> ImapMailbox:
    return ImapMailbox(
        server.host,
        server.port,
        username=server.username,
        password=password or server.password,
        tls=False,
        timeout=5,
    )


def test_the_adapter_reads_unseen_mail_without_marking_it_and_marks_on_request() -> None:
    with ImapServer() as server:
        uid = server.deliver(reply("<ob-1@zoomprop.example>", "Yes, call me. ✓", "<r-1@gp>"))
        box = mailbox(server)
        assert isinstance(box, Mailbox)
        ((key, mail),) = box.unread()
        assert key == str(uid) and server.seen == []  # peeked, not marked
        assert mail.in_reply_to == "<ob-1@zoomprop.example>"
        assert mail.references == ("<ob-1@zoomprop.example>",)
        assert mail.message_id == "<r-1@gp>" and mail.received_at == FIXED_NOW
        assert "Yes, call me. ✓" in mail.text
        box.mark_read(key)
        assert server.seen == [uid] and box.unread() == []
        with pytest.raises(ConfigError, match="refused our login"):
            mailbox(server, "wrong").unread()
    with pytest.raises(UpstreamError, match="cannot reach"):
        ImapMailbox("127.0.0.1", closed_port(), username="u", password="p", tls=False).unread()


def test_polling_stores_replies_once_and_records_what_is_not_this_orgs(testdb: PgDB) -> None:
    db = testdb.app()
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())  # approvals feed KC-08
    deps = local_deps(
        Settings.from_env(SETTINGS), db, InlineTransport(), knowledge=knowledge, sender=Accepting()
    )
    outbox_id = approved_message(deps, "dana@granitepeak.example")
    assert sending.send(deps, ORG, outbox_id)["status"] == "sent"
    ours = f"<{outbox_id}@zoomprop.example>"
    with ImapServer() as server:
        server.deliver(reply(ours, QUOTED, "<r-1@gp>"))
        server.deliver(reply("<unknown@zoomprop.example>", "Who?", "<r-2@gp>"))
        # another org's mailbox holding a reply to our message files nothing for either
        assert replies.poll(deps, deps.rejections, mailbox(server), OTHER) == {
            "stored": 0,
            "duplicate": 0,
            "rejected": 2,
        }
        assert server.seen == [1, 2]
        server.deliver(reply(ours, QUOTED, "<r-1@gp>"))
        counts = replies.poll(deps, deps.rejections, mailbox(server), ORG)
        assert counts == {"stored": 1, "duplicate": 0, "rejected": 0}
        server.deliver(reply(ours, "Not interested, thanks.", "<r-1@gp>"))  # sent twice
        assert replies.poll(deps, deps.rejections, mailbox(server), ORG)["duplicate"] == 1
    with db.transaction(ORG) as cur:
        (row,) = fetch_all(cur, "SELECT body, sentiment FROM replies")
        status = fetch_all(cur, "SELECT status FROM outbox")
    assert (row["body"], row["sentiment"]) == ("Not interested, thanks.", "negative")
    assert [s["status"] for s in status] == ["replied"]
    with db.transaction(OTHER) as cur:
        assert fetch_all(cur, "SELECT id FROM replies") == []
    rejected = testdb.owner_rows(
        "SELECT claimed_org_id, reason FROM rejected_deliveries WHERE function = 'replies-mailbox'"
    )
    assert [(r["claimed_org_id"], r["reason"].split(":")[0]) for r in rejected] == [
        (OTHER, "not_found"),
        (OTHER, "not_found"),
    ]
