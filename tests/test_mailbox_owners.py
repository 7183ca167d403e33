"""A person's sending mailbox follows ownership (issue 35 item 1) on the real send path: the
real PostgreSQL, the DNS stand-in, the real SMTP server. A new contact's first message goes
from its owner's ready mailbox while it has room today, else by rotation; a contact's later
steps stay in their first mailbox and thread whoever owns it now; a mailbox is given only to
an active person of its own org; a person who leaves (Clerk's membership event) has their
mailboxes paused and audited, and a leaver's mailbox resumes only once given to someone."""

from __future__ import annotations

from datetime import timedelta

import pytest

from colony.contracts.mailboxes import MailboxChange
from colony.errors import Unprocessable
from colony.flows.outbound import mailboxes
from colony.flows.tenants import clerk_members, owners
from colony.store.tenants import members
from tests.mailbox_world import ACME, DOMAIN, RIVAL, RIVAL_DOMAIN, SECOND, MailWorld, mail_world

__all__ = ["mail_world"]
pytestmark = pytest.mark.covers("ENT-012", "fn:send", "fn:admin")


def _people(w: MailWorld, org: str, *people: tuple[str, str]) -> None:
    with w.deps.db.transaction(org) as cur:
        for user_id, role in people:
            members.join(cur, org, user_id, role, f"{user_id}@people.example", user_id)


def _owned(w: MailWorld, email: str, owner: str | None) -> str:
    contact = w.contact(ACME, email)
    if owner is not None:
        w.rows(
            ACME, "UPDATE contacts SET owner_id = %s WHERE id = %s RETURNING id", (owner, contact)
        )
    return contact


def test_a_first_message_goes_from_its_owners_mailbox_and_later_steps_keep_theirs(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    _people(
        w, ACME, ("user_ada", "org:admin"), ("user_bob", "org:member"), ("user_cy", "org:member")
    )
    team = w.mailbox(ACME, f"team@{DOMAIN}", 50, name="Team")  # most room: rotation picks it
    bob = w.mailbox(ACME, f"bob@{SECOND}", 2, name="Bob", user_id="user_bob")
    campaign = w.campaign(ACME)
    bobs = [_owned(w, f"b{n}@prospect{n}.example", "user_bob") for n in range(3)]
    cys = _owned(w, "c@cy.example", "user_cy")  # an owner with no mailbox
    nobodys = _owned(w, "n@nobody.example", None)
    firsts = {c: w.send(ACME, w.message(ACME, c, campaign=campaign)) for c in [*bobs, cys, nobodys]}
    assert {f["status"] for f in firsts.values()} == {"sent"}
    boxes = {c: w.outbox(ACME, f["outbox_id"])["mailbox_id"] for c, f in firsts.items()}
    # bob's two with room went from his mailbox; the third found it full: rotation
    assert [boxes[c] for c in bobs] == [bob, bob, team]
    assert boxes[cys] == team and boxes[nobodys] == team
    froms = [str(r.message["From"]) for r in w.smtp.received]
    assert froms[:2] == [f"Bob <bob@{SECOND}>"] * 2 and froms[2] == f"Team <team@{DOMAIN}>"

    # owners change; the sequences do not change mailbox (a reply threads under the first)
    owners.reassign(w.deps, ACME, "contact", bobs[0], "user_cy", "user_ada")
    owners.reassign(w.deps, ACME, "contact", bobs[2], "user_bob", "user_ada")
    owners.reassign(w.deps, ACME, "contact", cys, "user_bob", "user_ada")
    w.now[0] += timedelta(days=1)  # bob's mailbox has room again
    for contact, box in ((bobs[0], bob), (bobs[2], team), (cys, team)):
        follow = w.send(ACME, w.message(ACME, contact, campaign=campaign, step=2))
        assert follow["status"] == "sent", follow
        assert w.outbox(ACME, follow["outbox_id"])["mailbox_id"] == box
        assert w.smtp.received[-1].message["In-Reply-To"] == firsts[contact]["message_id"]
    # and a new contact of bob's goes from his mailbox again
    fresh = w.send(ACME, w.message(ACME, _owned(w, "f@fresh.example", "user_bob")))
    assert w.outbox(ACME, fresh["outbox_id"])["mailbox_id"] == bob


def test_a_mailbox_belongs_only_to_an_active_person_of_its_own_org(mail_world: MailWorld) -> None:
    w = mail_world
    _people(w, ACME, ("user_ada", "org:admin"), ("user_gone", "org:member"))
    _people(w, RIVAL, ("user_mallory", "org:admin"))
    with w.deps.db.transaction(ACME) as cur:
        members.leave(cur, "user_gone")
    for who, why in (
        ("user_nobody", "is not a person of"),
        ("user_gone", "has left"),
        ("user_mallory", "is not a person of"),  # another org's user: not seen here (RLS)
    ):
        with pytest.raises(Unprocessable, match=f"user_id: '{who}' {why} this organisation"):
            w.mailbox(ACME, f"x-{who}@{DOMAIN}", user_id=who)
    ada = w.mailbox(ACME, f"ada@{DOMAIN}", user_id="user_ada")
    with pytest.raises(Unprocessable, match="user_id: 'user_mallory' is not a person of"):
        mailboxes.change(w.deps, ACME, ada, MailboxChange(user_id="user_mallory"), "user_ada")
    # the rival's own mailbox cannot name ACME's person either
    with pytest.raises(Unprocessable, match="user_id: 'user_ada' is not a person of"):
        w.mailbox(RIVAL, f"m@{RIVAL_DOMAIN}", user_id="user_ada")
    cleared = mailboxes.change(w.deps, ACME, ada, MailboxChange(user_id=None), "user_ada")
    assert cleared["user_id"] is None
    rows = w.rows(ACME, "SELECT address, user_id FROM sender_mailboxes")
    assert rows == [{"address": f"ada@{DOMAIN}", "user_id": None}]


def test_a_leavers_mailbox_is_paused_audited_and_resumes_only_once_given_on(
    mail_world: MailWorld,
) -> None:
    w = mail_world
    _people(w, ACME, ("user_ada", "org:admin"), ("user_bob", "org:member"))
    ada = w.mailbox(ACME, f"ada@{DOMAIN}", 50, name="Ada", user_id="user_ada")
    bob = w.mailbox(ACME, f"bob@{SECOND}", 50, name="Bob", user_id="user_bob")
    campaign = w.campaign(ACME)
    dana = _owned(w, "dana@prospect.example", "user_bob")
    first = w.send(ACME, w.message(ACME, dana, campaign=campaign))
    assert w.outbox(ACME, first["outbox_id"])["mailbox_id"] == bob

    gone = clerk_members.Membership(ACME, None, "user_bob", "org:member", None, "", w.now[0])
    result = clerk_members.apply(w.deps, "organizationMembership.deleted", gone, "msg_1")
    assert result["handed_over"]["to"] == "user_ada"
    assert result["handed_over"]["mailboxes_paused"] == 1
    shown = mailboxes.get(w.deps, ACME, bob)
    assert (shown["status"], shown["user_id"], shown["sending"]) == ("paused", "user_bob", False)
    assert ("effect", "mailbox.pause", "its person left the organisation") in w.audit(ACME)
    assert (
        shown["waits_because"]
        == "paused: its person user_bob left; give it to someone to resume it"
    )

    # dana is ada's now; her next step waits for its own (paused) mailbox, a new contact of
    # ada's goes from ada's
    step2 = w.send(ACME, w.message(ACME, dana, campaign=campaign, step=2))
    assert step2["status"] == "deferred"
    assert step2["reason"] == f"bob@{SECOND}: {shown['waits_because']}"
    erin = w.send(ACME, w.message(ACME, _owned(w, "erin@erin.example", "user_ada")))
    assert w.outbox(ACME, erin["outbox_id"])["mailbox_id"] == ada
    sent_before = len(w.smtp.received)

    with pytest.raises(Unprocessable, match="status: its person 'user_bob' has left"):
        mailboxes.change(w.deps, ACME, bob, MailboxChange(status="active"), "user_ada")
    assert mailboxes.get(w.deps, ACME, bob)["status"] == "paused"
    given = MailboxChange(user_id="user_ada", status="active")
    resumed = mailboxes.change(w.deps, ACME, bob, given, "user_ada")
    assert resumed["sending"] is True and resumed["user_id"] == "user_ada"
    assert w.send(ACME, step2["outbox_id"])["status"] == "sent"
    assert len(w.smtp.received) == sent_before + 1
    got = w.smtp.received[-1]
    assert got.mail_from == f"bob@{SECOND}"
    assert got.message["In-Reply-To"] == first["message_id"]
