"""Replies (issue 18 item 5): an inbound message matched to the message it answers, stored
for the contact and deal, and recorded as the message's ``replied`` delivery event (which
stops the contact's sequence: ``colony.flows.outbound.delivery``).

    inbound mail ─► In-Reply-To, then References (newest first) ─► our outbox Message-IDs
        ─► the org that sent it ─► quoted history stripped, sentiment (colony.policy.replies)
        ─► ``replies`` (once per inbound Message-ID) ─► delivery.record(…, "replied", …)

A reply naming no message of ours, or (for a mailbox bound to one org) another org's
message, is ``NotFound``; the caller records the rejection. The text is untrusted: it is
stored and shown as data, never logged, and it never reaches an exception message.

Two ways in: the provider's inbound webhook (``colony.flows.outbound.mail_events``) and, for SMTP
relay users, ``poll`` over a ``Mailbox`` (``colony.adapters.imap_mailbox``): the deployment's
reply mailbox, read every few minutes by the ``replies-poll`` schedule.

A bounce returned by mail (a delivery status notification: ``InboundMail.report``) is never a
reply: ``bounced`` files it as its message's bounce, by its codes (``colony.policy.bounces``:
``Action: failed`` with a 5.x.x status suppresses the address, a 4.x.x one or ``delayed`` is
counted as a soft bounce), idempotent on the report's Message-ID.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from colony.errors import NotFound
from colony.flows.crm import engagements
from colony.flows.deps import FlowDeps
from colony.flows.outbound import delivery
from colony.policy import bounces
from colony.policy.replies import own_text, sentiment
from colony.ports import InboundMail, Mailbox, RejectionRecorder
from colony.store.outbound import replies

HANDLER = "replies-mailbox"
MAX_REFERENCES = 20  # a long thread's References: the newest are the ones that matter
_MESSAGE_ID = re.compile(r"<[^<>\s]{1,500}>")


def answered_ids(mail: InboundMail) -> list[str]:
    """The Message-IDs a reply answers, the likeliest first: In-Reply-To, then References
    from the newest, each once."""
    ids = _MESSAGE_ID.findall(mail.in_reply_to or "")
    refs = [m for ref in mail.references for m in _MESSAGE_ID.findall(ref)]
    ids.extend(reversed(refs[-MAX_REFERENCES:]))
    return list(dict.fromkeys(ids))


def ingest(
    deps: FlowDeps, mail: InboundMail, *, event_id: str, org_id: str | None = None
) -> dict[str, Any]:
    """Store one inbound reply and record it as its message's ``replied`` event.

    ``org_id``: the org whose mailbox it came from (a polled mailbox); None for the
    provider's inbound webhook, which serves every org, where the message names its org.
    Idempotent on the reply's Message-ID (``event_id`` when it has none)."""
    if mail.report is not None:
        return bounced(deps, mail, event_id=event_id, org_id=org_id)
    ids = answered_ids(mail)
    if not ids:
        raise NotFound("the reply names no message (no In-Reply-To or References)")
    sender_org = replies.org_of_message(deps.db, ids)
    if sender_org is None or (org_id is not None and sender_org != org_id):
        raise NotFound("the reply answers no message this organisation sent")
    body = own_text(mail.text)
    mood = sentiment(body)
    key = mail.message_id.strip() or f"<{event_id}>"
    with deps.db.transaction(sender_org) as cur:
        message = replies.answered(cur, ids)
        if message is None:  # erased between the two reads
            raise NotFound("the reply answers no message this organisation sent")
        reply_id = replies.store(
            cur,
            sender_org,
            message,
            message_id=key,
            body=body,
            sentiment=mood,
            received_at=mail.received_at,
        )
        if reply_id:  # on the contact in the org's HubSpot, if connected
            engagements.log_later(deps, cur, sender_org, "reply", reply_id)
    # Keyed by the reply itself: a redelivery of the same reply (a new webhook attempt, the
    # mailbox read again) is one event, even after a crash between the two transactions.
    reply_event = "reply-" + hashlib.sha256(f"{sender_org}\n{key}".encode()).hexdigest()[:40]
    outcome = delivery.record(
        deps, sender_org, str(message["id"]), "replied", reply_event, sentiment=mood
    )
    return {
        "status": "stored" if reply_id else "duplicate",
        "org_id": sender_org,
        "outbox_id": str(message["id"]),
        "reply_id": reply_id,
        "sentiment": mood,
        "delivery": outcome,
    }


def bounced(
    deps: FlowDeps, mail: InboundMail, *, event_id: str, org_id: str | None = None
) -> dict[str, Any]:
    """File a delivery status notification as the bounce of the message it returns
    (``NotFound`` for one that names no message of ours, or of ``org_id``'s)."""
    report = mail.report
    assert report is not None
    original = report.original_message_id or ""
    found = replies.org_of_message(deps.db, [original[:500]]) if original else None
    if found is None or (org_id is not None and found != org_id):
        raise NotFound("the delivery report returns no message this organisation sent")
    if report.action not in ("failed", "delayed"):  # delivered, relayed, expanded: no bounce
        return {"status": "ignored", "org_id": found, "action": report.action}
    reported = "permanent" if report.action == "failed" else "transient"
    bounce = bounces.classify(report.smtp, report.status, reported=reported)
    key = mail.message_id.strip() or f"<{event_id}>"
    report_event = "dsn-" + hashlib.sha256(f"{found}\n{key}".encode()).hexdigest()[:40]
    outbox_id = original.strip("<>").partition("@")[0]
    outcome = delivery.record(deps, found, outbox_id, "bounced", report_event, bounce=bounce)
    return {"status": "bounce", "org_id": found, "outbox_id": outbox_id, "delivery": outcome}


def poll(
    deps: FlowDeps, rejections: RejectionRecorder, mailbox: Mailbox, org_id: str | None = None
) -> dict[str, int]:
    """Ingest the unread replies of a mailbox: the deployment's (``org_id`` None: the reply
    names its org, as for the inbound webhook) or one bound to ``org_id``. Each is marked
    read once stored, or once its rejection (no message of ours, or of that org's) is
    recorded; a failure to store leaves it unread for the next poll."""
    counts = {"stored": 0, "duplicate": 0, "rejected": 0}  # and "bounce", "ignored" as found
    for key, mail in mailbox.unread():
        event_id = f"imap-{org_id or 'deployment'}-{key}"[:200]
        try:
            status = ingest(deps, mail, event_id=event_id, org_id=org_id)["status"]
            counts[status] = counts.get(status, 0) + 1
        except NotFound as error:
            rejections.record(HANDLER, event_id, org_id, f"{error.code}: {error}")
            counts["rejected"] += 1
        mailbox.mark_read(key)
    return counts
