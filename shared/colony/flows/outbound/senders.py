"""Which mailbox a message goes from, and sending it from there (issue 39 item 2).

    a claimed outbox row ─► the org has no mailbox: its From setting (or the deployment's
        COLONY_MAIL_FROM), judged by ``sending_domains.sender`` as before
    ─► it was assigned a mailbox by an attempt that may have sent it (a lapsed lease): that
        one, under the same Message-ID
    ─► a later message to a contact of a campaign: the mailbox of the contact's first
        message (and its Gmail thread), whatever its room today: a sequence never changes
        mailbox; if that mailbox is at its limit the message waits for tomorrow
    ─► a new contact: ``pick_mailbox_for_contact`` over the ready mailboxes (active, domain
        verified, grant connected): its owner's mailbox with most room left today when the
        owner has one with room (issue 35), else the one with most room left today; none
        with room: it waits for tomorrow
    ─► the mailbox cannot send now (paused, its domain paused, its grant missing or
        revoked): the message waits, saying why; nothing is dropped
    ─► assigned: mailbox and UTC day on the row (its count), Message-ID on the mailbox's
        domain, From "<display name> <address>"

Counts hold across instances: the mailbox rows are locked before they are counted, in the
claim's transaction (``store.outbound.mailboxes``), so a mailbox never passes its limit.
A message that waits is handed back uncounted and unbound: it did not leave, so its next
attempt chooses again (a contact's first message may then go from another mailbox).

Sending: a ``provider`` mailbox goes through the deployment's ``Sender`` (SMTP or Resend),
DKIM-signed with its domain's key; a ``gmail`` / ``graph`` mailbox through the org's grant
(``mailbox_grants.send``), and a grant the provider refuses turns into a wait, recorded on
the row (its card reads ``wait_reason``) and on the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import formataddr, parseaddr
from typing import Any, Literal

from colony.errors import ConfigError
from colony.flows.deps import FlowDeps
from colony.flows.outbound import mailbox_grants, sending_domains
from colony.flows.outbound.mailboxes import ramp_of, why_not
from colony.policy import mailboxes as rules
from colony.ports import Mail, Sender, SentRef
from colony.store.db import Row
from colony.store.outbound import mailboxes as repo

PAUSED_DOMAIN_RETRY_SECONDS = 3600  # a paused sending domain is re-checked daily, or on demand
MAILBOX_RETRY_SECONDS = 86_400  # a paused mailbox or a grant to reconnect: resumed on the act


@dataclass(frozen=True, slots=True)
class Choice:
    """What a claimed message does: ``send`` (from ``mail_from``, under ``message_id``;
    ``mailbox`` None: the org's From setting), ``wait`` (``reason``, retried after ``delay``
    seconds) or ``refuse`` (``reason``)."""

    action: Literal["send", "wait", "refuse"]
    reason: str = ""
    delay: float = 0.0
    mail_from: str = ""
    message_id: str = ""
    verdict: sending_domains.FromDomain | None = None  # how the relay path signs
    mailbox: Row | None = None
    thread: str | None = None  # Gmail's thread of the contact's first message


def choose(deps: FlowDeps, cur: Any, org_id: str, row: Row, limits: Row | None) -> Choice:
    """Where the claimed ``row`` goes from, in the claim's transaction."""
    if not repo.any_mailbox(cur):
        mail_from = (limits["mail_from"] if limits else None) or deps.settings.mail_from
        return _from_setting(deps, cur, org_id, row, mail_from)
    now = deps.clock()
    today = now.date()
    mine = repo.of_message(cur, row["id"]) or {}
    first = None
    if not mine.get("mailbox_id") and row["campaign_id"] and row["contact_id"]:
        first = repo.first_of_contact(cur, row["campaign_id"], row["contact_id"], row["id"])
    chosen = mine.get("mailbox_id") or (first or {}).get("mailbox_id")
    thread = mine.get("provider_thread") or (first or {}).get("provider_thread")
    if chosen is None:
        picked = _rotate(cur, row, now)
        if isinstance(picked, Choice):
            return picked
        chosen = picked
    else:
        repo.lock(cur, [chosen])
    mailbox = repo.get(cur, chosen)
    assert mailbox is not None  # a message's mailbox is never deleted
    blocked = why_not(mailbox)
    if blocked is not None:
        delay = PAUSED_DOMAIN_RETRY_SECONDS if "domain" in blocked else MAILBOX_RETRY_SECONDS
        return Choice("wait", f"{mailbox['address']}: {blocked}", delay, mailbox=mailbox)
    if mine.get("send_day") != today:
        limit = ramp_of(mailbox).limit_on(today)
        used = repo.used_on(cur, [chosen], today, row["id"]).get(chosen, 0)
        if used >= limit:
            why = f"{mailbox['address']} reached its limit of {limit} for today"
            return Choice("wait", why, _to_tomorrow(now), mailbox=mailbox)
    verdict = sending_domains.sender(cur, org_id, mailbox["address"], "required")
    if verdict.action == "refuse":
        return Choice("refuse", verdict.reason, mailbox=mailbox)
    if verdict.action == "wait":
        return Choice("wait", verdict.reason, PAUSED_DOMAIN_RETRY_SECONDS, mailbox=mailbox)
    message_id = repo.assign(cur, row["id"], chosen, today, f"<{row['id']}@{mailbox['domain']}>")
    return Choice(
        "send",
        mail_from=formataddr((mailbox["display_name"], mailbox["address"])),
        message_id=message_id,
        verdict=verdict if mailbox["kind"] == "provider" else None,
        mailbox=mailbox,
        thread=thread,
    )


def on_cards(cur: Any, drafts: list[Row]) -> dict[str, dict[str, Any]]:
    """What an email draft's approval card says of the mailbox it will go from, by item id:
    a later step's (its contact's first mailbox), or rotation over the ready ones; and,
    when that mailbox cannot send now, why (its send will wait: a revoked grant, a paused
    domain). Nothing for an org without mailboxes."""
    if not drafts or not repo.any_mailbox(cur):
        return {}
    ready = [m["address"] for m in repo.ready(cur)]
    shown: dict[str, dict[str, Any]] = {}
    for draft in drafts:
        payload = draft.get("payload") or {}
        campaign, contact = payload.get("campaign_id"), payload.get("contact_id")
        first = repo.first_of_contact(cur, campaign, contact, "") if campaign and contact else None
        mailbox = repo.get(cur, first["mailbox_id"]) if first else None
        if mailbox is not None:
            why = why_not(mailbox)
            shown[str(draft["id"])] = {
                "from": mailbox["address"],
                "sending": why is None,
                "waits_because": why,
            }
        else:
            why = None if ready else "no mailbox of this organisation can send now"
            shown[str(draft["id"])] = {"from": ready, "sending": why is None, "waits_because": why}
    return shown


def pick_mailbox_for_contact(cur: Any, row: Row, rooms: list[rules.Room]) -> rules.Room | None:
    """The mailbox a new contact's first message goes from, among ``rooms`` (the org's ready
    mailboxes and their room today): its owner's, when the owner has one there with room
    left today (the one with most room); otherwise rotation over them all. Only a first
    message comes here: later steps keep their first mailbox, whoever owns the contact now."""
    if row["contact_id"]:
        theirs = repo.of_contact_owner(cur, str(row["contact_id"]))
        own = rules.rotate([r for r in rooms if r.mailbox_id in theirs]) if theirs else None
        if own is not None:
            return own
    return rules.rotate(rooms)


def _rotate(cur: Any, row: Row, now: datetime) -> str | Choice:
    today = now.date()
    ready = repo.ready(cur)
    if not ready:  # say why of each, so the card and the row name what to mend
        held = "; ".join(f"{m['address']}: {why_not(m)}" for m in repo.listing(cur))
        why = f"no mailbox of this organisation can send now ({held})"
        return Choice("wait", why, MAILBOX_RETRY_SECONDS)
    ids = [str(m["id"]) for m in ready]
    repo.lock(cur, ids)
    used = repo.used_on(cur, ids, today, row["id"])
    rooms = [
        rules.Room(str(m["id"]), m["address"], ramp_of(m).limit_on(today), used.get(m["id"], 0))
        for m in ready
    ]
    room = pick_mailbox_for_contact(cur, row, rooms)
    if room is None:
        why = f"every mailbox of this organisation reached its limit for {today.isoformat()}"
        return Choice("wait", why, _to_tomorrow(now))
    return room.mailbox_id


def _to_tomorrow(now: datetime) -> float:
    tomorrow = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max((tomorrow - now).total_seconds(), 1.0)


def _from_setting(deps: FlowDeps, cur: Any, org_id: str, row: Row, mail_from: str) -> Choice:
    """An org without mailboxes sends from its From setting, as before issue 39 item 2."""
    verdict = sending_domains.sender(cur, org_id, mail_from, deps.settings.sending_domains)
    if verdict.action == "refuse":
        return Choice("refuse", verdict.reason)
    if verdict.action == "wait":
        return Choice("wait", verdict.reason, PAUSED_DOMAIN_RETRY_SECONDS)
    domain = parseaddr(mail_from)[1].rpartition("@")[2]
    if not domain:
        raise ConfigError(f"COLONY_MAIL_FROM={mail_from!r} has no address to send from")
    message_id = repo.fix_message_id(cur, row["id"], f"<{row['id']}@{domain}>")
    return Choice("send", mail_from=mail_from, message_id=message_id, verdict=verdict)


def wait(cur: Any, outbox_id: str, reason: str) -> None:
    """Hand the claimed message back to the queue, uncounted, saying why it waits."""
    repo.wait(cur, outbox_id, reason)


def deliver(
    deps: FlowDeps, org_id: str, choice: Choice, mail: Mail, relay: Sender
) -> SentRef | None:
    """Send ``mail`` the way its mailbox sends: through ``relay`` or the org's grant
    (``GrantRefused`` when the grant is gone: already recorded as revoked; the caller makes
    the message wait)."""
    mailbox = choice.mailbox
    if mailbox is None or mailbox["kind"] == "provider":
        relay.send(mail)
        return None
    api = deps.mailbox_apis.get(mailbox["kind"])
    if api is None:
        raise ConfigError(f"this function has no {mailbox['kind']} app to send through")
    return mailbox_grants.send(
        deps, deps.secrets, api, org_id, str(mailbox["id"]), mail, choice.thread
    )


def sent(cur: Any, outbox_id: str, ref: SentRef | None) -> None:
    """Keep the provider's thread of a sent message (a follow-up is sent into it)."""
    if ref is not None and ref.thread:
        repo.set_thread(cur, outbox_id, ref.thread)
