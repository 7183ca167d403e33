"""Sender mailboxes (issue 39 item 2) below HTTP, on the provider path: the real PostgreSQL,
the DNS stand-in, the real SMTP server verifying each message's DKIM signature against that
DNS. A mailbox is refused off the org's verified domains; a campaign's new contacts spread
over the org's mailboxes within today's limits (the warm-up ramp's), a mailbox at its cap
defers to tomorrow and never drops; a contact's later steps go from its first mailbox,
threaded; counts hold across two instances sending at once; a paused domain pauses its
mailboxes; a reply to any mailbox's message finds its thread."""

from __future__ import annotations

import threading
from datetime import date, timedelta

import pytest

from colony.contracts.mailboxes import MailboxChange
from colony.errors import NotFound, Unprocessable
from colony.flows.outbound import mailboxes, replies, sending, sending_domains
from colony.policy.mailboxes import Ramp, Room, rotate
from colony.ports import InboundMail
from colony.settings import Settings
from colony.store import Database
from colony.testing.inline import local_deps
from tests.conftest import PgDB
from tests.mailbox_world import ACME, DOMAIN, RIVAL, RIVAL_DOMAIN, SECOND, MailWorld, mail_world

__all__ = ["mail_world"]
pytestmark = pytest.mark.covers("ENT-012", "fn:send", "fn:admin")


def test_the_warm_up_ramp_grows_from_its_start_to_the_limit() -> None:
    ramp = Ramp(daily_limit=100, warmup_start=date(2026, 3, 1), warmup_days=20, warmup_first=10)
    days = [date(2026, 2, 28) + timedelta(days=n) for n in (0, 1, 2, 11, 20, 21, 60)]
    assert [ramp.limit_on(d) for d in days] == [0, 10, 14, 55, 95, 100, 100]
    assert Ramp(daily_limit=30).limit_on(date(2020, 1, 1)) == 30  # no ramp: the limit
    rooms = [Room("a", "a@x", 10, 9), Room("b", "b@x", 4, 1), Room("c", "c@x", 3, 0)]
    chosen = rotate(rooms)  # b and c have 3 left each: c, which sent less
    assert chosen is not None and chosen.mailbox_id == "c"
    assert rotate([Room("a", "a@x", 2, 2)]) is None


def test_the_mailbox_apps_secrets_are_never_printed() -> None:
    settings = Settings.from_env(
        {
            "COLONY_GOOGLE_MAIL_CLIENT_ID": "google-app",
            "COLONY_GOOGLE_MAIL_CLIENT_SECRET": "g-secret-value",
            "COLONY_MICROSOFT_MAIL_CLIENT_SECRET": "m-secret-value",
            "COLONY_GOOGLE_OAUTH_URL": "http://127.0.0.1:9",
        }
    )
    apps = settings.mailbox_apps
    assert apps.google_client_secret == "g-secret-value"
    assert apps.google_authorize_url == "http://127.0.0.1:9/o/oauth2/v2/auth"
    assert apps.graph_api_url == "https://graph.microsoft.com"  # the real one unless told
    assert "secret-value" not in repr(settings) and "google-app" in repr(settings)


def test_a_mailbox_is_refused_off_the_orgs_verified_domains(mail_world: MailWorld) -> None:
    w = mail_world
    first = w.mailbox(ACME, "Ada@Mail.Acme.Example", 40, name="Ada Lovelace")
    (shown,) = mailboxes.listing(w.deps, ACME)["mailboxes"]
    assert shown["id"] == first and shown["address"] == f"ada@{DOMAIN}"
    assert shown["limit_today"] == 40 and shown["sending"] is True and shown["kind"] == "provider"
    with pytest.raises(Unprocessable, match="not one of this organisation's sending domains"):
        w.mailbox(ACME, "eve@elsewhere.example")
    # the second tenant: another org's verified domain is not one of its own
    with pytest.raises(Unprocessable, match="not one of this organisation's sending domains"):
        w.mailbox(RIVAL, f"mallory@{DOMAIN}")
    with pytest.raises(NotFound):
        mailboxes.get(w.deps, RIVAL, first)
    with pytest.raises(NotFound):
        mailboxes.change(w.deps, RIVAL, first, MailboxChange(status="paused"), "user_mallory")
    assert mailboxes.listing(w.deps, RIVAL) == {"mailboxes": []}
    for bad, why in (
        ({"warmup_days": 10}, "warmup_start"),
        ({"warmup_first": 60, "warmup_days": 5, "warmup_start": "2026-03-01"}, "warmup_first"),
    ):
        with pytest.raises(Unprocessable, match=why):
            w.mailbox(ACME, f"bob@{DOMAIN}", 50, **bad)
    with pytest.raises(Exception, match="already one of this organisation's mailboxes"):
        w.mailbox(ACME, f"ada@{DOMAIN}")
    assert [a for _, a, _ in w.audit(ACME) if a.startswith("mailbox.")] == ["mailbox.add"]


def test_new_contacts_spread_within_limits_and_a_cap_defers_to_tomorrow(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    ada = w.mailbox(ACME, f"ada@{DOMAIN}", 2, name="Ada Lovelace")
    # warming up: its third day of a 10-day ramp from 1 to 21 a day is 5
    bob = w.mailbox(
        ACME,
        f"bob@{SECOND}",
        21,
        name="Bob",
        warmup_start=(w.today() - timedelta(days=2)).isoformat(),
        warmup_days=10,
        warmup_first=1,
    )
    campaign = w.campaign(ACME)
    contacts = [w.contact(ACME, f"p{n}@prospect{n}.example") for n in range(8)]
    sent = [w.send(ACME, w.message(ACME, c, campaign=campaign)) for c in contacts]
    assert [s["status"] for s in sent] == ["sent"] * 7 + ["deferred"]
    counts = {m["id"]: m["sent_today"] for m in mailboxes.listing(w.deps, ACME)["mailboxes"]}
    assert counts == {ada: 2, bob: 5}
    froms = sorted(str(r.message["From"]) for r in w.smtp.received)
    assert (
        froms == ["Ada Lovelace <ada@mail.acme.example>"] * 2 + ["Bob <bob@team.acme.example>"] * 5
    )
    for got in w.smtp.received:  # signed for its own mailbox's domain, verified at the server
        domain = got.mail_from.rpartition("@")[2]
        assert got.dkim is True and f"d={domain};" in got.message["DKIM-Signature"]
        assert str(got.message["Message-ID"]).endswith(f"@{domain}>")
    assert "every mailbox" in sent[-1]["reason"]
    waiting = w.outbox(ACME, sent[-1]["outbox_id"])
    assert waiting["status"] == "queued" and waiting["mailbox_id"] is None
    assert waiting["send_day"] is None and "reached its limit" in waiting["wait_reason"]
    (task,) = w.deferred()
    assert task.delay_seconds == 15 * 3600  # 09:00 UTC: the next UTC day is 15 hours off
    w.now[0] += timedelta(days=1)  # tomorrow: the deferred task runs and it goes
    assert w.send(ACME, sent[-1]["outbox_id"])["status"] == "sent"
    assert len(w.smtp.received) == 8


def test_a_contacts_later_steps_go_from_its_first_mailbox_threaded(mail_world: MailWorld) -> None:
    w = mail_world
    w.mailbox(ACME, f"ada@{DOMAIN}", 1, name="Ada")
    bob = w.mailbox(ACME, f"bob@{SECOND}", 1, name="Bob")
    campaign = w.campaign(ACME)
    dana, erin = w.contact(ACME, "dana@gp.example"), w.contact(ACME, "erin@gp.example")
    first = w.send(ACME, w.message(ACME, dana, campaign=campaign))
    w.send(ACME, w.message(ACME, erin, campaign=campaign))
    dana_box = w.outbox(ACME, first["outbox_id"])["mailbox_id"]
    w.now[0] += timedelta(days=3)
    w.mailbox(ACME, f"cleo@{DOMAIN}", 50, name="Cleo")  # lots of room: rotation would pick it
    follow = w.send(ACME, w.message(ACME, dana, campaign=campaign, step=2, subject="Re: Lease"))
    assert follow["status"] == "sent"
    assert w.outbox(ACME, follow["outbox_id"])["mailbox_id"] == dana_box
    got = w.smtp.received[-1]
    assert got.message["In-Reply-To"] == first["message_id"]
    assert got.message["References"] == first["message_id"]
    assert str(got.message["From"]).endswith(w.smtp.received[0].mail_from + ">")
    # at its limit, a later step waits for its own mailbox rather than change mailbox
    third = w.send(ACME, w.message(ACME, dana, campaign=campaign, step=3))
    assert third["status"] == "deferred" and "reached its limit of 1" in third["reason"]
    assert w.outbox(ACME, third["outbox_id"])["mailbox_id"] is None  # uncounted while it waits
    assert dana_box != bob  # ada@ (address order broke the tie), so erin went from bob@


def test_counts_hold_across_two_instances_sending_at_once(
    mail_world: MailWorld, testdb: PgDB
) -> None:
    w = mail_world
    w.mailbox(ACME, f"ada@{DOMAIN}", 3, name="Ada")
    ids = [w.message(ACME, w.contact(ACME, f"q{n}@prospect{n}.example")) for n in range(8)]
    other = local_deps(  # a second instance: its own pool, same database
        w.deps.settings,
        testdb.app(),
        w.transport,
        sender=w.deps.sender,
        secrets=w.secrets,
        clock=w.deps.clock,
    )
    start = threading.Barrier(2)
    results: list[dict[str, str]] = []

    def run(deps: object, mine: list[str]) -> None:
        start.wait()
        for outbox_id in mine:
            results.append(sending.send(deps, ACME, outbox_id))  # type: ignore[arg-type]

    threads = [
        threading.Thread(target=run, args=(w.deps, ids[0::2])),
        threading.Thread(target=run, args=(other, ids[1::2])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert isinstance(other.db, Database)
    other.db.close()
    statuses = sorted(r["status"] for r in results)
    assert statuses == ["deferred"] * 5 + ["sent"] * 3
    assert len(w.smtp.received) == 3  # never over the limit, nothing sent twice
    (counted,) = w.rows(ACME, "SELECT count(*) AS n FROM outbox WHERE send_day IS NOT NULL")
    assert counted["n"] == 3


def test_a_paused_domain_pauses_its_mailboxes_and_new_contacts_go_elsewhere(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    ada = w.mailbox(ACME, f"ada@{DOMAIN}", 50, name="Ada")
    w.mailbox(ACME, f"bob@{SECOND}", 50, name="Bob")
    campaign = w.campaign(ACME)
    dana = w.contact(ACME, "dana@gp.example")
    first = w.send(ACME, w.message(ACME, dana, campaign=campaign))
    assert w.outbox(ACME, first["outbox_id"])["mailbox_id"] == ada  # most room, then address
    selector = w.rows(ACME, "SELECT selector FROM sending_domains WHERE domain = %s", (DOMAIN,))
    w.dns.remove(f"{selector[0]['selector']}._domainkey.{DOMAIN}")
    assert sending_domains.recheck(w.deps, w.resolver, ACME)["paused"] == [DOMAIN]
    shown = {m["address"]: m for m in mailboxes.listing(w.deps, ACME)["mailboxes"]}
    assert shown[f"ada@{DOMAIN}"]["sending"] is False
    assert "paused" in shown[f"ada@{DOMAIN}"]["waits_because"]
    # a new contact goes from the mailbox whose domain passes
    new = w.send(ACME, w.message(ACME, w.contact(ACME, "erin@gp.example"), campaign=campaign))
    assert new["status"] == "sent" and w.smtp.received[-1].mail_from == f"bob@{SECOND}"
    # dana's next step waits for her own mailbox; nothing is dropped
    follow = w.send(ACME, w.message(ACME, dana, campaign=campaign, step=2))
    assert follow["status"] == "deferred" and DOMAIN in follow["reason"]
    assert w.outbox(ACME, follow["outbox_id"])["status"] == "queued"


def test_an_admin_pause_waits_and_a_resume_hands_the_mail_back(mail_world: MailWorld) -> None:
    w = mail_world
    ada = w.mailbox(ACME, f"ada@{DOMAIN}", 50, name="Ada")
    mailboxes.change(w.deps, ACME, ada, MailboxChange(status="paused"), "user_ada")
    waiting = w.send(ACME, w.message(ACME, w.contact(ACME, "dana@gp.example")))
    assert waiting["status"] == "deferred" and "no mailbox" in waiting["reason"]
    assert w.smtp.received == []
    resumed = mailboxes.change(w.deps, ACME, ada, MailboxChange(status="active"), "user_ada")
    assert resumed["sending"] is True
    assert w.send(ACME, waiting["outbox_id"])["status"] == "sent"


def test_a_reply_to_any_mailbox_of_the_org_finds_its_thread(mail_world: MailWorld) -> None:
    w = mail_world
    w.mailbox(ACME, f"ada@{DOMAIN}", 1, name="Ada")
    w.mailbox(ACME, f"bob@{SECOND}", 1, name="Bob")
    w.mailbox(RIVAL, f"mal@{RIVAL_DOMAIN}", 5, name="Mal")
    sent = [w.send(ACME, w.message(ACME, w.contact(ACME, f"r{n}@gp.example"))) for n in range(2)]
    ids = {w.smtp.received[n].mail_from: sent[n] for n in range(2)}
    assert set(ids) == {f"ada@{DOMAIN}", f"bob@{SECOND}"}
    answered = ids[f"bob@{SECOND}"]
    reply = InboundMail(
        message_id="<reply-1@gp.example>",
        sender="Dana <r1@gp.example>",
        subject="Re: Lease costs",
        text="Interesting, tell me more.",
        in_reply_to=answered["message_id"],
        references=(answered["message_id"],),
    )
    stored = replies.ingest(w.deps, reply, event_id="evt-1")
    assert stored["org_id"] == ACME and stored["outbox_id"] == answered["outbox_id"]
    with pytest.raises(NotFound):  # the second tenant's mailbox never claims it
        replies.ingest(w.deps, reply, event_id="evt-2", org_id=RIVAL)


def test_an_org_without_mailboxes_still_sends_from_its_from_setting(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    with w.deps.db.transaction(RIVAL) as cur:
        cur.execute(
            "INSERT INTO org_settings (org_id, mail_from) VALUES (%s, %s)"
            " ON CONFLICT (org_id) DO UPDATE SET mail_from = EXCLUDED.mail_from",
            (RIVAL, f"Mal <mal@{RIVAL_DOMAIN}>"),
        )
    sent = w.send(RIVAL, w.message(RIVAL, w.contact(RIVAL, "z@gp.example")))
    assert sent["status"] == "sent" and sent["message_id"].endswith(f"@{RIVAL_DOMAIN}>")
    assert w.smtp.received[-1].dkim is True
