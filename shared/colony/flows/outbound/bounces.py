"""Bounces as their codes say (issue 39 item 4): the one seam every send path (SMTP, Resend,
a mailbox's API) and every bounce report (a provider's webhook) goes through.

    refused at send (``MailRejected`` / ``MailDeferred``, with the server's codes)
        ─► ``refused``: classified (``colony.policy.bounces``) and kept on the message
            permanent ─► ``bounced``, the address suppressed, its sequence stopped, the
                breaker judged (``breaker.judge``)
            transient ─► counted; the address refused for now too often or too long
                (``policy.bounces.exhausted``) ─► as permanent; else the message goes back to
                the queue and is tried again after ``retry_delay`` (10 minutes, doubling)
    reported later (a provider's ``email.bounced``, with its type and diagnostic code)
        ─► ``reported``: the same classes; a permanent one bounces the message (the
           delivery flow moves it and suppresses); a transient one is counted on the
           message and against the address, which is suppressed once exhausted (the
           provider has retried the message itself before reporting it)

What is kept is codes (``550 5.1.1``), the class and a name (``bad_mailbox``): never the
server's words, which can quote the recipient; the audit log says the same.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from colony.flows.deps import FlowDeps
from colony.flows.outbound import breaker, senders, sequences
from colony.policy import bounces as policy
from colony.ports import MailDeferred, MailRejected
from colony.store.approvals import audit
from colony.store.outbound import bounces as repo
from colony.store.outbound import outbox, suppressions


def refused(
    deps: FlowDeps,
    org_id: str,
    row: Any,
    error: MailRejected | MailDeferred,
    mail_from: str,
) -> dict[str, Any]:
    """Apply a send attempt's refusal to its claimed message; the send step's answer
    (``retry_in``: seconds before the message is tried again, for the caller to schedule)."""
    reported = "permanent" if isinstance(error, MailRejected) else "transient"
    bounce = policy.classify(error.smtp, error.status, reported=reported)
    outbox_id, address = str(row["id"]), row["to_address"]
    with deps.db.transaction(org_id) as cur:
        kept = _keep(cur, outbox_id, bounce)
        exhausted = bounce.klass == "transient" and _exhausted(cur, address)
        detail = {"code": bounce.code, "class": bounce.klass, "label": bounce.label}
        if bounce.klass == "transient" and not exhausted:  # back to the queue, uncounted
            senders.wait(cur, outbox_id, f"refused for now ({bounce.code}); tried again later")
            effect(cur, org_id, row, "message_soft_bounced", {**detail, "tries": kept})
            return {
                "outbox_id": outbox_id,
                "status": "deferred",
                "reason": f"refused for now ({bounce.code})",
                "bounce": detail,
                "retry_in": policy.retry_delay(kept),
            }
        why = "soft bounces exhausted" if exhausted else "hard bounce"
        outbox.finish_send(cur, outbox_id, "bounced", f"{why} ({bounce.code} {bounce.label})")
        suppressions.add(cur, org_id, address, "bounced")
        if row["contact_id"]:
            sequences.stop_contacts(cur, [row["contact_id"]], "bounced")
        effect(cur, org_id, row, "message_bounced", {**detail, "exhausted": exhausted})
        tripped = breaker.judge(cur, org_id, row["campaign_id"], mail_from)
    breaker.report(org_id, row["campaign_id"], tripped)
    return {"outbox_id": outbox_id, "status": "bounced", "bounce": detail, **_trip(tripped)}


def sending_from(cur: Any, outbox_id: str, address: str) -> None:
    """Record the From address a claimed message goes from: its mailbox's and its domain's
    rates count it."""
    repo.set_sender(cur, outbox_id, address)


def reported(cur: Any, org_id: str, outbox_id: str, bounce: policy.Bounce) -> bool:
    """A provider's bounce report on a message that left: keep its codes; whether it is a
    bounce for good (permanent, or the address's soft bounces are exhausted: suppressed)."""
    _keep(cur, outbox_id, bounce)
    if bounce.klass == "permanent":
        return True
    address = outbox.address_of(cur, outbox_id)
    if address and _exhausted(cur, address):
        suppressions.add(cur, org_id, address, "bounced")
        return True
    return False


def _keep(cur: Any, outbox_id: str, bounce: policy.Bounce) -> int:
    row = repo.record(
        cur,
        outbox_id,
        smtp=bounce.smtp,
        status=bounce.status,
        klass=bounce.klass,
        label=bounce.label,
    )
    return 0 if row is None else int(row["soft_bounces"])


def _exhausted(cur: Any, address: str) -> bool:
    count, lasting = repo.soft_standing(cur, address)
    return policy.exhausted(count, timedelta(seconds=lasting))


def _trip(tripped: dict[str, Any]) -> dict[str, Any]:
    return {k: tripped[k] for k in ("paused", "paused_senders") if k in tripped}


def effect(cur: Any, org_id: str, row: Any, action: str, detail: dict[str, Any]) -> None:
    """An effect of sending ``row`` (a claimed outbox message) on the audit log."""
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
