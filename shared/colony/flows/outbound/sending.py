"""Sending an approved message (issue 18), and the way out of ever receiving another.

    approval applied ─► outbox ``queued`` ─► send(outbox id), once per delivery of its task
        ─► claim: ``queued`` → ``sending`` (a lease; the Message-ID fixed) ─► suppressed?
        ─► written in the tier decided for its contact? (else refused, and why)
        ─► over the org's cap? (waits)
        ─► its mailbox (``senders``: the contact's first message's, else rotation over the
           org's ready mailboxes within their limits; none: the org's From setting), its
           domain verified (else refused), paused or at its limit (waits); Message-ID on
           the mailbox's domain
        ─► that mailbox or its domain paused by the breaker, or a campaign message and the
           org has no postal address? (waits: ``breaker``, ``postal_address``)
        ─► sent: the relay (``Sender``), DKIM-signed with the domain's key, or the org's own
           Gmail / Microsoft 365 mailbox through its grant (a refused grant: waits)
        ─► ``sent``  (a refusal: ``bounces.refused``, by its codes: for good ─► ``bounced``,
           address suppressed; for now ─► back to the queue, tried again with back-off)
        ─► logged on the contact in the org's HubSpot, if connected (``flows.crm``)

Only email steps reach the outbox: a LinkedIn or call step is a task for a person
(``sequence_task``), and an approved message that names another channel is never queued.

Exactly once as far as mail allows. The claim is one conditional UPDATE, so of duplicate
deliveries one sends and the others find the row ``sending`` (``SendInProgress``: retried
later, when they find it ``sent`` and answer so) or already ``sent``. The one window is a
crash between the server's acceptance and our commit of ``sent``: the row stays ``sending``
until its lease lapses, and the retry sends again under the same Message-ID, so the
recipient's mail system sees the same message twice and can tell. A transient refusal
(``UpstreamError``) leaves the lease to lapse the same way.

A message refused for its From address, or because it was written in another tier than the
one decided for its contact (issue 39; its sequence stops there too), is ``suppressed`` with
``send_error`` saying why (``refused: …``) and a ``message_refused`` entry on the audit log:
it never leaves, and is not retried. One waiting for a paused domain, or a cap, is handed
back to the queue and its task scheduled again: nothing waiting is dropped.

The suppression list is read at send time, not only when the message was drafted: an
address unsubscribed or bounced after the approval is never mailed. Every message carries
``List-Unsubscribe`` (an expiring signed link) with ``List-Unsubscribe-Post:
List-Unsubscribe=One-Click`` (RFC 8058), and the same link in its footer, under the org's
postal address (CAN-SPAM).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from email.utils import parseaddr
from typing import Any
from urllib.parse import quote

from colony.errors import ConfigError, Conflict, GrantRefused, NotFound, ValidationFailed
from colony.flows.crm import engagements
from colony.flows.deps import FlowDeps
from colony.flows.outbound import (
    bounces,
    breaker,
    postal_address,
    senders,
    sending_domains,
    sequences,
)
from colony.flows.outbound.bounces import effect as _record  # the send's audit entries
from colony.flows.outbound.send_queue import schedule_send
from colony.ports import Mail, MailDeferred, MailRejected
from colony.runtime import signed
from colony.store.campaigns import campaigns
from colony.store.outbound import outbox, suppressions
from colony.store.tenants import org_admin

DAILY_CAP, DOMAIN_HOURLY_CAP = 200, 5  # an org without settings (store.tenants.org_admin defaults)
DOMAIN_RETRY_SECONDS = 900
PAUSED_DOMAIN_RETRY_SECONDS = senders.PAUSED_DOMAIN_RETRY_SECONDS
LEASE_SECONDS = 300  # longer than one SMTP exchange can take (the sender's timeout is 20 s)
UNSUBSCRIBE_DAYS = 90  # RFC 8058 asks links to keep working for a long while
_DOMAIN = b"colony-unsubscribe-v1."
_SETTING = "COLONY_UNSUBSCRIBE_TOKEN_KEY"


class SendInProgress(Conflict):
    """Another delivery of this message's task is sending it now: retry later."""

    code = "send_in_progress"
    expected = True


class NotQueuedYet(NotFound):
    """The message is not in the outbox (yet: the approval's commit may not be visible)."""

    code = "not_queued"
    expected = True


def queue_approved(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """An approved ``outbound_message`` → its outbox row, handed to the send queue (the
    ``outbound_message`` applier, inside the decision's transaction). A message of a paused
    campaign is kept ``blocked``: it is handed over when the campaign resumes."""
    channel = payload.get("channel") or sequences.EMAIL
    if channel != sequences.EMAIL:  # a task's talking points are never emailed
        raise ValidationFailed(f"a {channel} step is a task for a person; it is never emailed")
    campaign_id = payload.get("campaign_id")
    paused = False
    if campaign_id:
        postal_address.require_for(cur, org_id)  # campaign email carries the org's address
        # Share-locked: a breaker pause cannot commit between this read and the outbox insert.
        paused = campaigns.status_for_share(cur, campaign_id) == "paused"
    outbox_id = outbox.queue(
        cur,
        org_id,
        item_id,
        campaign_id=campaign_id,
        contact_id=payload.get("contact_id"),
        subject=payload["subject"],
        body=payload["body"],
        status="blocked" if paused else "queued",
        sequence_step=int(payload.get("sequence_step") or 1),
    )
    if not paused:
        schedule_send(deps, org_id, outbox_id)


def _over_cap(cur: Any, limits: Any, address: str, now: datetime) -> tuple[str, float] | None:
    """Why this message must wait, and how long (None: it may go now). The org's daily cap
    waits for the next UTC day; the per-recipient-domain hourly cap for a quarter of an hour.
    Checked per send, so concurrent sends may pass a cap by at most the function's
    concurrency: a soft limit that protects the sender's reputation, not an invoice."""
    daily = int(limits["daily_send_cap"]) if limits else DAILY_CAP
    hourly = int(limits["per_domain_hourly_cap"]) if limits else DOMAIN_HOURLY_CAP
    counts = outbox.sent_counts(cur, address.rpartition("@")[2])
    if counts["today"] >= daily:
        tomorrow = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
        return f"the org's daily cap of {daily} is reached", (tomorrow - now).total_seconds()
    if counts["domain_hour"] >= hourly:
        return f"{hourly} an hour to this domain is reached", DOMAIN_RETRY_SECONDS
    return None


def send(deps: FlowDeps, org_id: str, outbox_id: str) -> dict[str, Any]:
    # Everything our configuration must provide is checked before the claim: a ConfigError
    # after it would hold the message under its lease for nothing.
    base, key = _unsubscribe_base(deps), _key(deps)
    relay = deps.sender
    with deps.db.transaction(org_id) as cur:
        # The Message-ID is fixed once the mailbox is (its domain's): ``senders.choose``.
        row = outbox.claim_send(cur, outbox_id, message_id=None, lease_seconds=LEASE_SECONDS)
        if row is None:
            return _not_claimed(cur, outbox_id)
        address = row["to_address"]
        why = suppressions.reason_for(cur, address) if address else "no address"
        if why is not None:
            outbox.finish_send(cur, outbox_id, "suppressed", f"suppressed: {why}")
            return {"outbox_id": outbox_id, "status": "suppressed", "reason": why}
        stop = sequences.stopped(cur, row)  # a later step, after a reply or a bounce
        if stop is not None:
            outbox.finish_send(cur, outbox_id, "suppressed", stop)
            return {"outbox_id": outbox_id, "status": "suppressed", "reason": stop}
        wrong = sequences.wrong_tier(cur, row)  # refused before it leaves, and recorded
        if wrong is not None:
            outbox.finish_send(cur, outbox_id, "suppressed", f"refused: {wrong}")
            sequences.refused(cur, row, "tier")
            _record(cur, org_id, row, "message_refused", {"reason": wrong})
            return {"outbox_id": outbox_id, "status": "refused", "reason": wrong}
        limits = org_admin.settings(cur)
        wait = _over_cap(cur, limits, address, deps.clock())
        choice = senders.choose(deps, cur, org_id, row, limits) if wait is None else None
        if choice is not None and choice.action == "refuse":  # recorded, never sent or retried
            outbox.finish_send(cur, outbox_id, "suppressed", f"refused: {choice.reason}")
            _record(cur, org_id, row, "message_refused", {"reason": choice.reason})
            return {"outbox_id": outbox_id, "status": "refused", "reason": choice.reason}
        if choice is not None and choice.action == "wait":
            wait = (choice.reason, choice.delay)
        postal = postal_address.for_footer(cur, row)
        from_address = parseaddr(choice.mail_from)[1].lower() if choice is not None else ""
        held = (breaker.held_by(cur, from_address) if from_address else None) or postal.waiting
        if wait is None and held:  # the breaker, or the footer's address, holds it
            wait = (held, PAUSED_DOMAIN_RETRY_SECONDS)
        if wait is not None:  # deferred, never dropped: back to the queue, sent later
            return _defer(deps, cur, org_id, outbox_id, *wait)
        assert choice is not None
        bounces.sending_from(cur, outbox_id, from_address)  # its mailbox's and domain's rates
        thread = sequences.thread_headers(cur, row)
    dkim = None
    if choice.verdict is not None and choice.verdict.action == "sign":
        try:
            dkim = sending_domains.signing_key(deps.secrets, choice.verdict)
        except Exception:  # no key now: the message goes back to the queue, the task retries
            with deps.db.transaction(org_id) as cur:
                outbox.release(cur, outbox_id)
            raise
    link = _link(deps, base, key, org_id, address)
    mail = Mail(
        message_id=choice.message_id,
        sender=choice.mail_from,
        to=address,
        subject=row["subject"],
        text=f"{row['body']}\n\n--\n{postal.footer}To stop receiving these emails: {link}\n",
        headers={
            "List-Unsubscribe": f"<{link}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            **thread,
        },
        tags={"org_id": org_id, "outbox_id": outbox_id},  # a provider's events name it back
        dkim=dkim,
    )
    try:
        # UpstreamError propagates: the task retries after the lease
        ref = senders.deliver(deps, org_id, choice, mail, relay)
    except GrantRefused as refused:  # recorded as revoked: waits for a person to reconnect
        with deps.db.transaction(org_id) as cur:
            why = f"the mailbox's grant was refused ({refused.reason}): connect it again"
            return _defer(deps, cur, org_id, outbox_id, why, senders.MAILBOX_RETRY_SECONDS)
    except (MailRejected, MailDeferred) as error:  # the server's answer, by its codes
        outcome = bounces.refused(deps, org_id, row, error, from_address)
        if "retry_in" in outcome:  # refused for now: tried again later, never dropped
            retry = outcome.pop("retry_in")
            due = int(deps.clock().timestamp() + retry)
            schedule_send(deps, org_id, outbox_id, attempt=f"soft-{due}", delay=retry)
        return outcome
    with deps.db.transaction(org_id) as cur:
        outbox.finish_send(cur, outbox_id, "sent")
        senders.sent(cur, outbox_id, ref)
        _record(cur, org_id, row, "message_sent", {"message_id": choice.message_id})
        engagements.log_later(deps, cur, org_id, "email", outbox_id)  # on the HubSpot contact
        following = sequences.after_sent(deps, cur, org_id, row)
    return {"outbox_id": outbox_id, "status": "sent", "message_id": choice.message_id, **following}


def _defer(
    deps: FlowDeps, cur: Any, org_id: str, outbox_id: str, reason: str, delay: float
) -> dict[str, Any]:
    """Back to the queue (saying why, uncounted) and its task scheduled again."""
    senders.wait(cur, outbox_id, reason)
    due = int(deps.clock().timestamp() + delay)
    schedule_send(deps, org_id, outbox_id, attempt=f"deferred-{due}", delay=delay)
    return {"outbox_id": outbox_id, "status": "deferred", "reason": reason}


def _not_claimed(cur: Any, outbox_id: str) -> dict[str, Any]:
    state = outbox.send_state(cur, outbox_id)
    if state is None:
        raise NotQueuedYet(f"outbox message {outbox_id!r} is not queued in this org")
    if state["status"] == "sending" and state["leased"]:
        raise SendInProgress(f"outbox message {outbox_id!r} is being sent; retry later")
    if state["status"] == "blocked":  # its campaign is paused: the resume re-queues it
        return {"outbox_id": outbox_id, "status": "blocked", "deferred": True}
    return {"outbox_id": outbox_id, "status": state["status"], "duplicate": True}


# ─── unsubscribe ─────────────────────────────────────────────────────────────────────────


def _key(deps: FlowDeps) -> str:
    key = deps.settings.unsubscribe_token_key
    if not key:
        raise ConfigError(f"{_SETTING} is not set; messages cannot carry an unsubscribe link")
    return key


def _unsubscribe_base(deps: FlowDeps) -> str:
    base = deps.settings.unsubscribe_url
    if not base and (events := deps.settings.function_urls.get("delivery-events")):
        base = f"{events.rstrip('/')}/unsubscribe"  # the mail-events function serves it
    if not base:
        raise ConfigError("COLONY_UNSUBSCRIBE_URL is not set; messages need an unsubscribe link")
    return base.rstrip("/")


def _link(deps: FlowDeps, base: str, key: str, org_id: str, address: str) -> str:
    expires = deps.clock() + timedelta(days=UNSUBSCRIBE_DAYS)
    body = {"v": 1, "o": org_id, "a": address}
    return f"{base}?t={quote(signed.sign(key, _DOMAIN, body, expires, setting=_SETTING))}"


def unsubscribe_link(deps: FlowDeps, org_id: str, address: str) -> str:
    """The signed, expiring link that unsubscribes ``address`` from ``org_id``'s mail."""
    return _link(deps, _unsubscribe_base(deps), _key(deps), org_id, address)


def check_unsubscribe(deps: FlowDeps, token: str, now: datetime) -> tuple[str, str]:
    """The (org, address) an unsubscribe link names, if it verifies and has not expired."""
    body = signed.verify(
        _key(deps), _DOMAIN, token, now, version=1, what="unsubscribe link", setting=_SETTING
    )
    org_id, address = body.get("o"), body.get("a")
    if not isinstance(org_id, str) or not isinstance(address, str) or "@" not in address:
        raise ValidationFailed("the unsubscribe link names no address")
    return org_id, address


def unsubscribe(deps: FlowDeps, token: str, now: datetime) -> dict[str, Any]:
    """Put the link's address on its org's suppression list and stop every message to it
    that has not left; idempotent (a second click finds it suppressed)."""
    org_id, address = check_unsubscribe(deps, token, now)
    with deps.db.transaction(org_id) as cur:
        suppressions.add(cur, org_id, address, "unsubscribed")
        stopped = outbox.stop_to(cur, address.lower())
        sequences.stop_address(cur, address, "unsubscribed")
    return {"unsubscribed": True, "stopped": len(stopped)}
