"""``make run``'s sequence from two mailboxes (issue 39 item 5) against real local servers:
every function served by functions-framework, the embedded PostgreSQL, the DNS stand-in on
the wire, the Gmail stand-in (connected through the admin API's connect and callback) and
the real SMTP server verifying DKIM with dkimpy. After the demo's campaign (whose pending
drafts name the prospects), the scene's two contacts each get an email, a LinkedIn task a
person marks done, and a follow-up threaded under the first email, each contact from its own
mailbox; what the scene reports is checked against what the SMTP server and the database hold.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import KnowledgeStore
from colony.local.campaign_demo import demo_functions, run_demo_campaign
from colony.local.demo import load_demo
from colony.local.demo_context import DemoContext
from colony.local.mailbox_demo import (
    DOMAIN,
    MAILBOXES,
    connect_mailboxes,
    demo_mail,
    run_mailbox_demo,
)
from colony.store import fetch_all
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("ENT-004", "fn:send", "fn:approval", "fn:admin")


def test_make_run_sends_a_three_step_sequence_from_two_mailboxes_signed(
    testdb: PgDB, tmp_path: Path, no_ambient_config: None
) -> None:
    settings = dataclasses.replace(testdb.settings, data_dir=tmp_path)
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    org = load_demo(db, knowledge, say=lambda _: None).org_id
    said: list[str] = []
    with (
        demo_mail(said.append) as mail,
        demo_functions(settings, org, testdb.dsn(APP_ROLE), said.append, extra_env=mail.env()) as (
            servers,
            token,
        ),
    ):
        demo = DemoContext(settings, db, knowledge, org, servers, token, said.append, mail.smtp)
        boxes = connect_mailboxes(demo, mail)  # as make run does: before its campaigns
        run_demo_campaign(demo)
        before = len(mail.smtp.received)
        shown = run_mailbox_demo(demo, mail, boxes)
    assert shown is not None, said[-3:]

    # two contacts, each from its own mailbox of the org; every message of one contact from
    # the same one (the From the SMTP server received), three steps each, two of them email
    addresses = {m["address"] for m in MAILBOXES}
    assert set(shown.from_mailbox.values()) == addresses
    with db.transaction(org) as cur:
        sent = fetch_all(
            cur,
            "SELECT o.contact_id, o.sequence_step, o.message_id, m.address, m.kind"
            " FROM outbox o JOIN sender_mailboxes m ON m.id = o.mailbox_id"
            " WHERE o.campaign_id = %s AND o.status = 'sent' ORDER BY o.sequence_step",
            (shown.campaign_id,),
        )
        steps = fetch_all(
            cur,
            "SELECT subject_id, kind, status, decided_by, payload->>'channel' AS channel"
            " FROM approval_items WHERE payload->>'campaign_id' = %s"
            " ORDER BY (payload->>'sequence_step')::int",
            (shown.campaign_id,),
        )
    assert sorted(r["sequence_step"] for r in sent) == [1, 1, 3, 3]
    for row in sent:
        assert row["address"] == shown.from_mailbox[str(row["contact_id"])]
    received = {str(m.message["Message-ID"]): m for m in mail.smtp.received[before:]}
    assert len(received) == 4 and set(received) == {r["message_id"] for r in sent}
    for row in sent:
        message = received[row["message_id"]]
        assert row["address"] in str(message.message["From"])
        assert message.dkim is True  # dkimpy at the receiving server, against the DNS stand-in
        signature = str(message.message["DKIM-Signature"])
        selector = "google" if row["kind"] == "gmail" else "colony"
        assert f"d={DOMAIN}" in signature.replace(" ", "") and f"s={selector}" in signature
    firsts = {r["contact_id"]: r["message_id"] for r in sent if r["sequence_step"] == 1}
    for row in (r for r in sent if r["sequence_step"] == 3):
        follow_up = received[row["message_id"]].message
        assert follow_up["In-Reply-To"] == firsts[row["contact_id"]]
        assert str(follow_up["Subject"]).startswith("Re: ")
    assert (shown.threaded, shown.dkim_pass, shown.messages) == (2, 4, 4)

    # the LinkedIn steps were tasks a person marked done, and nothing of them was emailed
    tasks = [s for s in steps if s["channel"] == "linkedin"]
    assert len(tasks) == 2 and all(t["kind"] == "sequence_task" for t in tasks)
    assert all(t["status"] == "applied" and t["decided_by"] for t in tasks)
    assert (shown.tasks_done, shown.tasks_emailed) == (2, 0)
    printed = "\n".join(said)
    assert "marked done by a person" in printed and "DKIM verified" in printed
