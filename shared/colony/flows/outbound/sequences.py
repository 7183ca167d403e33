"""Sequences (ENT-004; issue 18 item 2): a contact walks through its sequence, step by step,
and any sign that they do not want it stops it at once.

    step 1 drafted (AGT-005, campaign run) ─► enrolled: the library's steps for the
        campaign's angle and tier
    step n sent ─► step n+1 due after its delay (in the contact's business hours when their
        timezone is known) ─► a Cloud Tasks task (``campaign-resume``) ─► SequenceStep to
        AGT-005 ─► step n+1 drafted knowing steps 1..n (what was sent, how it fared)
        ─► approval queue (or approved by the person who approved step 1, when the org's
        settings say one approval covers the sequence) ─► send ─► …
    reply / bounce / complaint / unsubscribe / a rejected step ─► stopped

A stop is one UPDATE of the enrollment; the task, the draft and the send of every later step
read the enrollment first, so tasks already scheduled and drafts already queued do nothing
after it. Nothing here calls a model: the send, delivery-events and campaign-resume
functions import it without a model SDK.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from colony.contracts.events import SequenceStep
from colony.errors import HandoffRefused, NotFound
from colony.flows.deps import FlowDeps
from colony.policy.schedule import in_business_hours
from colony.registry.functions import AGENT_TOPICS, SEQUENCE_QUEUE
from colony.runtime.transport import enqueue, publish
from colony.store import orgdata
from colony.store.db import Row
from colony.store.outbound import sequences
from colony.store.tenants import org_admin

SENT = ("sent", "delivered")  # a step the contact received (a reply stops the sequence)
STOPS = ("replied", "bounced", "complained", "unsubscribed", "rejected")


def enroll(
    cur: Any, org_id: str, campaign_id: str, contact_id: str, run_id: str, angle: str, tier: str
) -> None:
    """Step 1 was drafted: enroll the contact in the library's sequence for this angle and
    tier (a one-step sequence needs no enrollment)."""
    steps = len(orgdata.sequence_steps(cur, angle, tier))
    if steps > 1:
        sequences.enroll(
            cur,
            org_id,
            campaign_id,
            contact_id,
            run_id=run_id,
            angle=angle,
            tier=tier,
            steps=steps,
        )


def after_sent(deps: FlowDeps, cur: Any, org_id: str, row: Row) -> dict[str, Any]:
    """Step n of ``row`` (a claimed outbox row) was sent: schedule step n+1, or complete the
    sequence with its last step. Runs in the transaction that records the send."""
    campaign_id, contact_id = row["campaign_id"], row["contact_id"]
    if not campaign_id or not contact_id:
        return {}
    enrollment = sequences.get(cur, campaign_id, contact_id)
    if enrollment is None or enrollment["status"] != "active":
        return {}
    sent_step = int(row["sequence_step"])
    if sent_step >= int(enrollment["steps"]):
        sequences.complete_if_last(cur, campaign_id, contact_id)
        return {"sequence": "completed"}
    library = orgdata.sequence_steps(cur, enrollment["angle"], enrollment["tier"])
    if len(library) <= sent_step:  # the library was shortened since: nothing more to send
        return {}
    delay_days = int(library[sent_step]["delay_days"])
    now = deps.clock()
    due = in_business_hours(now + timedelta(days=delay_days), sequences.timezone(cur, contact_id))
    sequences.set_due(cur, campaign_id, contact_id, due)
    nxt = sent_step + 1
    task = SequenceStep(org_id=org_id, campaign_id=campaign_id, contact_id=contact_id, step=nxt)
    enqueue(
        deps.transport,
        SEQUENCE_QUEUE,
        task,
        task_id=f"seq-{campaign_id}-{contact_id}-{nxt}",
        delay_seconds=max(0.0, (due - now).total_seconds()),
    )
    return {"next_step": nxt, "due": due.isoformat()}


def due(deps: FlowDeps, task: SequenceStep) -> dict[str, Any]:
    """The ``campaign-resume`` function's sequence task: step ``task.step`` is due. Hands it
    to AGT-005 if the sequence still stands; a stopped one ends here."""
    with deps.db.transaction(task.org_id) as cur:
        enrollment = sequences.get(cur, task.campaign_id, task.contact_id)
    why = _not_due(enrollment, task.step)
    if why:
        return {"skipped": why, "step": task.step}
    publish(deps.transport, AGENT_TOPICS["AGT-005"], task)
    return {"handed_to": "AGT-005", "step": task.step}


def standing(cur: Any, event: SequenceStep) -> tuple[Row, list[Row]] | str:
    """Whether AGT-005 may draft ``event.step`` now: the enrollment and steps 1..n-1, or why
    not (stopped, already drafted). A step whose predecessor was never sent is refused
    (``HandoffRefused``): such an event was not scheduled by ``after_sent``."""
    enrollment = sequences.get(cur, event.campaign_id, event.contact_id)
    if enrollment is None:
        raise NotFound(f"contact {event.contact_id[:64]!r} has no sequence in this campaign")
    why = _not_due(enrollment, event.step)
    if why:
        return why
    earlier = sequences.earlier_steps(cur, event.campaign_id, event.contact_id, event.step)
    if not any(e["step"] == event.step - 1 and e["status"] in SENT for e in earlier):
        raise HandoffRefused(f"step {event.step - 1} of this sequence has not been sent")
    return enrollment, earlier


def _not_due(enrollment: Row | None, step: int) -> str | None:
    if enrollment is None:
        return "no sequence"
    if enrollment["status"] != "active":
        return f"sequence {enrollment['status']}: {enrollment['stop_reason'] or 'last step'}"
    if int(enrollment["step"]) >= step:
        return f"step {step} already drafted"
    if step > int(enrollment["steps"]):
        return f"the sequence has {enrollment['steps']} steps"
    if int(enrollment["step"]) != step - 1:
        raise HandoffRefused(f"step {step - 1} of this sequence has not been drafted")
    return None


def covering_approver(cur: Any, enrollment: Row) -> str | None:
    """The person whose approval of step 1 approves this later step (None: a person decides
    it): only when the org's settings say one approval covers the sequence."""
    settings = org_admin.settings(cur)
    if not settings or settings.get("sequence_approval") != "once":
        return None
    return enrollment["approved_by"]


def decided(cur: Any, payload: Any, status: str, user_id: str) -> None:
    """An outbound message was decided: a rejected step stops its sequence; the person who
    approved step 1 is recorded (their approval covers the rest when the org says so)."""
    campaign_id, contact_id = payload.get("campaign_id"), payload.get("contact_id")
    if not campaign_id or not contact_id:
        return
    if status == "rejected":
        sequences.stop_in(cur, campaign_id, contact_id, "rejected")
    elif int(payload.get("sequence_step") or 1) == 1:
        sequences.approved_by(cur, campaign_id, contact_id, user_id)


def stop_contacts(cur: Any, contact_ids: list[str], reason: str) -> list[Row]:
    """Stop the sequences of these contacts, in every campaign (a reply, bounce, complaint)."""
    return sequences.stop(cur, contact_ids, reason)


def stop_address(cur: Any, address: str, reason: str) -> list[Row]:
    """Stop the sequences of every contact at ``address`` (an unsubscribe)."""
    return sequences.stop(cur, sequences.contacts_at(cur, address), reason)


def stopped(cur: Any, row: Row) -> str | None:
    """Why a claimed later step must not be sent (None: send it): its sequence stopped."""
    if int(row["sequence_step"]) < 2 or not row["campaign_id"] or not row["contact_id"]:
        return None
    enrollment = sequences.get(cur, row["campaign_id"], row["contact_id"], share=True)
    if enrollment is None or enrollment["status"] != "stopped":
        return None
    return f"sequence stopped: {enrollment['stop_reason']}"


def thread_headers(cur: Any, row: Row) -> dict[str, str]:
    """A later step answers the earlier ones in the recipient's mail client: ``In-Reply-To``
    the previous step's Message-ID and ``References`` all of them."""
    step = int(row["sequence_step"])
    if step < 2 or not row["campaign_id"] or not row["contact_id"]:
        return {}
    earlier = sequences.earlier_steps(cur, row["campaign_id"], row["contact_id"], step)
    ids = [str(e["message_id"]) for e in earlier if e["message_id"]]
    return {"In-Reply-To": ids[-1], "References": " ".join(ids)} if ids else {}


def history(earlier: list[Row]) -> list[dict[str, Any]]:
    """Steps 1..n-1 as AGT-005 reads them: what was sent and how it fared."""
    return [
        {
            "step": int(e["step"]),
            "subject": e["subject"],
            "outcome": e["status"],
            "sent_at": e["sent_at"].isoformat() if isinstance(e["sent_at"], datetime) else None,
        }
        for e in earlier
    ]
