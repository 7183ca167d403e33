"""Sending an approved message (issue 18), and the way out of ever receiving another.

    approval applied ─► outbox ``queued`` ─► send(outbox id), once per delivery of its task
        ─► claim: ``queued`` → ``sending`` (a lease; the Message-ID fixed) ─► suppressed?
        ─► written in the tier decided for its contact? (else refused, and why)
        ─► From's domain (``sending_domains.sender``): the org's verified domain, or refused
           (another org's, or unverified where verification is required), or paused (waits)
        ─► over a cap? (waits) ─► Sender.send, DKIM-signed with the domain's key
        ─► ``sent``  (a permanent refusal: ``bounced``, address suppressed)

Only email steps reach the outbox: a LinkedIn or call step is a task for a person
(``sequence_task``), and an approved message that names another channel is never queued.

Exactly once as far as mail allows. The claim is one conditional UPDATE, so of duplicate
deliveries one sends and the others find the row ``sending`` (``SendInProgress``: retried
later, when they find it ``sent`` and answer so) or already ``sent``. The one window is a
crash between the server's acceptance and our commit of ``sent``: the row stays ``sending``
until its lease lapses, and the retry sends again under the same Message-ID, so the
recipient's mail system sees the same message twice and can tell. A failure that may have
come after the server took the message (``UpstreamError``: a dropped connection) leaves the
lease to lapse the same way; a refusal for now (``MailDeferred``: a 4xx, nothing taken)
releases the claim, and the task's retry sends it.

A message refused for its From address, or because it was written in another tier than the
one decided for its contact (issue 39; its sequence stops there too), is ``suppressed`` with
``send_error`` saying why (``refused: …``) and a ``message_refused`` entry on the audit log:
it never leaves, and is not retried. One waiting for a paused domain, or a cap, is handed
back to the queue and its task scheduled again: nothing waiting is dropped.

The suppression list is read at send time, not only when the message was drafted: an
address unsubscribed or bounced after the approval is never mailed. Every message carries
``List-Unsubscribe`` (an expiring signed link) with ``List-Unsubscribe-Post:
List-Unsubscribe=One-Click`` (RFC 8058), and the same link in its footer.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from email.utils import parseaddr
from typing import Any
from urllib.parse import quote

from colony.errors import ConfigError, Conflict, NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.outbound import sending_domains, sequences
from colony.ports import Mail, MailDeferred, MailRejected
from colony.registry.functions import SEND_QUEUE
from colony.runtime import signed
from colony.runtime.transport import enqueue
from colony.store.approvals import audit
from colony.store.campaigns import campaigns
from colony.store.outbound import outbox, suppressions
from colony.store.tenants import org_admin

DAILY_CAP, DOMAIN_HOURLY_CAP = 200, 5  # an org without settings (store.tenants.org_admin defaults)
DOMAIN_RETRY_SECONDS = 900
PAUSED_DOMAIN_RETRY_SECONDS = 3600  # a paused sending domain is re-checked daily, or on demand
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


def message_id_for(mail_from: str, outbox_id: str) -> str:
    """The Message-ID of an outbox row: ours, stable across retries."""
    domain = parseaddr(mail_from)[1].rpartition("@")[2]
    if not domain:
        raise ConfigError(f"COLONY_MAIL_FROM={mail_from!r} has no address to send from")
    return f"<{outbox_id}@{domain}>"


def schedule_send(
    deps: FlowDeps, org_id: str, outbox_id: str, *, attempt: str = "", delay: float = 0
) -> str:
    """Hand an outbox message to the send step (a Cloud Tasks task named by the row, so a
    re-applied approval schedules it once; ``attempt`` names a later hand-over: a resume's,
    a deferral's), after ``delay`` seconds."""
    # lazy: the task model loads with the first hand-over (pydantic models, ~15 ms)
    from colony.contracts.tasks import SendMessage

    task = SendMessage(org_id=org_id, outbox_id=outbox_id)
    name = f"send-{outbox_id}" + (f"-{attempt}" if attempt else "")
    return enqueue(deps.transport, SEND_QUEUE, task, task_id=name, delay_seconds=delay)


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
    settings = deps.settings
    # Everything our configuration must provide is checked before the claim: a ConfigError
    # after it would hold the message under its lease for nothing.
    message_id = message_id_for(settings.mail_from, outbox_id)
    base, key = _unsubscribe_base(deps), _key(deps)
    sender = deps.sender
    with deps.db.transaction(org_id) as cur:
        row = outbox.claim_send(cur, outbox_id, message_id=message_id, lease_seconds=LEASE_SECONDS)
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
        mail_from = (limits["mail_from"] if limits else None) or settings.mail_from
        domain = sending_domains.sender(cur, org_id, mail_from, settings.sending_domains)
        if domain.action == "refuse":  # recorded, never sent, never retried
            outbox.finish_send(cur, outbox_id, "suppressed", f"refused: {domain.reason}")
            _record(cur, org_id, row, "message_refused", {"reason": domain.reason})
            return {"outbox_id": outbox_id, "status": "refused", "reason": domain.reason}
        thread = sequences.thread_headers(cur, row)
        wait = (
            (domain.reason, PAUSED_DOMAIN_RETRY_SECONDS)
            if domain.action == "wait"
            else _over_cap(cur, limits, address, deps.clock())
        )
        if wait is not None:  # deferred, never dropped: back to the queue, sent later
            reason, delay = wait
            outbox.release(cur, outbox_id)
            due = int(deps.clock().timestamp() + delay)
            schedule_send(deps, org_id, outbox_id, attempt=f"deferred-{due}", delay=delay)
            return {"outbox_id": outbox_id, "status": "deferred", "reason": reason}
    dkim = None
    if domain.action == "sign":
        try:
            dkim = sending_domains.signing_key(deps.secrets, domain)
        except Exception:  # no key now: the message goes back to the queue, the task retries
            with deps.db.transaction(org_id) as cur:
                outbox.release(cur, outbox_id)
            raise
    link = _link(deps, base, key, org_id, address)
    mail = Mail(
        message_id=row["message_id"],
        sender=mail_from,
        to=address,
        subject=row["subject"],
        text=f"{row['body']}\n\n--\nTo stop receiving these emails: {link}\n",
        headers={
            "List-Unsubscribe": f"<{link}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            **thread,
        },
        tags={"org_id": org_id, "outbox_id": outbox_id},  # a provider's events name it back
        dkim=dkim,
    )
    try:
        sender.send(mail)  # UpstreamError propagates: the task retries after the lease
    except MailDeferred:
        # Refused for now, not taken: the claim goes at once, so the task's next attempt
        # sends rather than finding it held until the lease lapses (the chaos soak found a
        # message held five minutes by one 4xx, and stranded by two: the task's attempts ran
        # out under the lease).
        with deps.db.transaction(org_id) as cur:
            outbox.release(cur, outbox_id)
        raise
    except MailRejected as error:
        with deps.db.transaction(org_id) as cur:
            outbox.finish_send(cur, outbox_id, "bounced", str(error))
            suppressions.add(cur, org_id, address, "bounced")
            _record(cur, org_id, row, "message_bounced", {"error": str(error)})
        return {"outbox_id": outbox_id, "status": "bounced"}
    with deps.db.transaction(org_id) as cur:
        outbox.finish_send(cur, outbox_id, "sent")
        _record(cur, org_id, row, "message_sent", {"message_id": row["message_id"]})
        following = sequences.after_sent(deps, cur, org_id, row)
    return {"outbox_id": outbox_id, "status": "sent", "message_id": row["message_id"], **following}


def _not_claimed(cur: Any, outbox_id: str) -> dict[str, Any]:
    state = outbox.send_state(cur, outbox_id)
    if state is None:
        raise NotQueuedYet(f"outbox message {outbox_id!r} is not queued in this org")
    if state["status"] == "sending" and state["leased"]:
        raise SendInProgress(f"outbox message {outbox_id!r} is being sent; retry later")
    if state["status"] == "blocked":  # its campaign is paused: the resume re-queues it
        return {"outbox_id": outbox_id, "status": "blocked", "deferred": True}
    return {"outbox_id": outbox_id, "status": state["status"], "duplicate": True}


def _record(cur: Any, org_id: str, row: Any, action: str, detail: dict[str, Any]) -> None:
    entry = audit.Entry(
        "effect",
        "system",
        "system",
        action,
        approval_item_id=row["approval_item_id"],
        item_kind="outbound_message",
        detail={"outbox_id": row["id"], **detail},
    )
    audit.append(cur, org_id, entry)


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
