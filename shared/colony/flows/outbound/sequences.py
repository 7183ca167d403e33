"""Sequences (ENT-004; issues 18 and 39): a contact walks through its sequence as the org
wrote it, step by step, and any sign that they do not want it stops it at once.

    step 1 drafted (AGT-005, campaign run) ─► enrolled: the library's steps for the
        campaign's angle and the tier AGT-004 decided (the campaign tier's when the library
        has no sequence for it)
    step n done ─► step n+1 due after its delay (in the contact's business hours when their
        timezone is known) ─► a Cloud Tasks task (``campaign-resume``) ─► SequenceStep to
        AGT-005 ─► step n+1 drafted from its guidance, knowing steps 1..n (what the contact
        got, how it fared) ─► the approval queue ─► …
    an email step: approved (or by the person who approved step 1, when the org's settings
        say one approval covers the sequence) ─► sent, threaded under the first email
        ("Re: …", ``In-Reply-To``, ``References``) ─► done
    a LinkedIn or call step: a task for a person with the drafted talking points; nothing is
        ever emailed for it ─► a person marks it done, or skips it ─► done
    reply / bounce / complaint / unsubscribe / a rejected email step ─► stopped

A stop is one UPDATE of the enrollment; the task, the draft and the send of every later step
read the enrollment first, so tasks already scheduled and drafts already queued do nothing
after it. Nothing here calls a model: the send, delivery-events and campaign-resume
functions import it without a model SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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

SENT = ("sent", "delivered")  # an email step the contact received (a reply stops it)
DONE = (*SENT, "done", "skipped")  # a step that lets the next one be drafted
STOPS = ("replied", "bounced", "complained", "unsubscribed", "rejected")
EMAIL = "email"
TASK_KIND = "sequence_task"  # the approval item a LinkedIn or call step becomes
STEP_KINDS = ("outbound_message", TASK_KIND)
REPLY_PREFIX = "Re: "


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a contact's sequence as the library wrote it: how it reaches them, what
    the org asks of it, and how long after the step before it is due."""

    number: int
    of: int  # the steps of the sequence (1: a single message, no enrollment)
    channel: str = EMAIL
    guidance: str | None = None
    delay_days: int = 0

    @property
    def task(self) -> bool:
        """A step for a person (LinkedIn, call), never sent by us."""
        return self.channel != EMAIL


@dataclass(frozen=True, slots=True)
class Library:
    """The library's sequence a contact walks: ``angle`` x ``tier``, its steps in order
    (empty: the library has none, and step 1 is an email without guidance)."""

    angle: str
    tier: str
    steps: tuple[Row, ...] = ()

    def step(self, number: int) -> Step:
        of = max(len(self.steps), 1)
        if number > len(self.steps):
            return Step(number, of)
        row = self.steps[number - 1]
        return Step(
            number,
            of,
            str(row.get("channel") or EMAIL),
            str(row["guidance"]) if row.get("guidance") else None,
            max(int(row.get("delay_days") or 0), 0),  # a negative delay is refused on write
        )

    def as_context(self) -> list[dict[str, Any]]:
        """The steps as ``OrgContext.sequence_library`` carries them."""
        return [
            {
                "angle": r["angle"],
                "tier": r["tier"],
                "step": int(r["step"]),
                "channel": r.get("channel") or EMAIL,
                "delay_days": max(int(r.get("delay_days") or 0), 0),
                "guidance": r["guidance"],
            }
            for r in self.steps
        ]


def library(cur: Any, angle: str, tier: str, default_tier: str | None = None) -> Library:
    """The sequence for ``angle`` x ``tier``; when the org wrote none for that tier, the one
    for ``default_tier`` (the campaign's: only the default), else an empty one."""
    for wanted in dict.fromkeys(t for t in (tier, default_tier) if t):
        steps = orgdata.sequence_steps(cur, angle, wanted)
        if steps:
            return Library(angle, wanted, tuple(steps))
    return Library(angle, tier)


def enroll(
    cur: Any,
    org_id: str,
    campaign_id: str,
    contact_id: str,
    run_id: str,
    tier: str,
    walked: Library,
) -> None:
    """Step 1 was drafted in ``tier``: enroll the contact in ``walked`` (a one-step sequence
    needs no enrollment)."""
    if len(walked.steps) > 1:
        sequences.enroll(
            cur,
            org_id,
            campaign_id,
            contact_id,
            run_id=run_id,
            angle=walked.angle,
            tier=tier,
            steps=len(walked.steps),
            sequence_tier=walked.tier if walked.tier != tier else None,
        )


def after_sent(deps: FlowDeps, cur: Any, org_id: str, row: Row) -> dict[str, Any]:
    """Step n of ``row`` (a claimed outbox row) was sent: schedule step n+1, or complete the
    sequence with its last step. Runs in the transaction that records the send."""
    campaign_id, contact_id = row["campaign_id"], row["contact_id"]
    if not campaign_id or not contact_id:
        return {}
    return _move_on(deps, cur, org_id, campaign_id, contact_id, int(row["sequence_step"]))


def _move_on(
    deps: FlowDeps, cur: Any, org_id: str, campaign_id: str, contact_id: str, finished: int
) -> dict[str, Any]:
    """Step ``finished`` is done: schedule the next one after its delay, or complete the
    sequence with its last step."""
    enrollment = sequences.get(cur, campaign_id, contact_id)
    if enrollment is None or enrollment["status"] != "active":
        return {}
    if finished >= int(enrollment["steps"]):
        sequences.complete_if_last(cur, campaign_id, contact_id)
        return {"sequence": "completed"}
    walked = library(cur, enrollment["angle"], enrollment["sequence_tier"])
    if len(walked.steps) <= finished:  # the library was shortened since: nothing more to do
        return {}
    nxt = finished + 1
    now = deps.clock()
    later = now + timedelta(days=walked.step(nxt).delay_days)
    due = in_business_hours(later, sequences.timezone(cur, contact_id))
    sequences.set_due(cur, campaign_id, contact_id, due)
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
    not (stopped, already drafted). A step whose predecessor was never done (an email sent,
    a task done or skipped) is refused (``HandoffRefused``): such an event was not scheduled
    by ``after_sent`` or a person's decision on a task."""
    enrollment = sequences.get(cur, event.campaign_id, event.contact_id)
    if enrollment is None:
        raise NotFound(f"contact {event.contact_id[:64]!r} has no sequence in this campaign")
    why = _not_due(enrollment, event.step)
    if why:
        return why
    earlier = sequences.earlier_steps(cur, event.campaign_id, event.contact_id, event.step)
    if not any(e["step"] == event.step - 1 and e["status"] in DONE for e in earlier):
        raise HandoffRefused(f"step {event.step - 1} of this sequence has not been sent or done")
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
    """The person whose approval of step 1 approves this later email step (None: a person
    decides it): only when the org's settings say one approval covers the sequence."""
    settings = org_admin.settings(cur)
    if not settings or settings.get("sequence_approval") != "once":
        return None
    return enrollment["approved_by"]


def decided(
    deps: FlowDeps,
    cur: Any,
    org_id: str,
    kind: str,
    payload: Mapping[str, Any],
    status: str,
    user_id: str,
) -> dict[str, Any] | None:
    """A step of a sequence was decided. An email step: a rejection stops the sequence; the
    person who approved step 1 is recorded (their approval covers the rest when the org says
    so). A task: done (approved) or skipped (rejected), either moves the sequence on; what
    that did is returned for the audit log (``action`` and its detail)."""
    campaign_id, contact_id = payload.get("campaign_id"), payload.get("contact_id")
    if not campaign_id or not contact_id:
        return None
    step = int(payload.get("sequence_step") or 1)
    if kind == TASK_KIND:
        moved = _move_on(deps, cur, org_id, campaign_id, contact_id, step)
        outcome = "done" if status == "applied" else "skipped"
        return {"action": "sequence_advanced", "step": step, "task": outcome, **moved}
    if status == "rejected":
        sequences.stop_in(cur, campaign_id, contact_id, "rejected")
    elif step == 1:
        sequences.approved_by(cur, campaign_id, contact_id, user_id)
    return None


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


def wrong_tier(cur: Any, row: Row) -> str | None:
    """Why a claimed message must be refused (None: send it): it was written in a tier other
    than the one decided for its contact (its sequence's, else AGT-004's latest), so its
    shape (CONST-006 sentence limits) and the sequence it belongs to are not the ones the
    contact was qualified for."""
    tiers = sequences.message_tiers(cur, row["approval_item_id"])
    if tiers is None or not tiers["written"] or not tiers["decided"]:
        return None
    if tiers["written"] == tiers["decided"]:
        return None
    return (
        f"tier {tiers['written']} disagrees with {tiers['decided']}, the tier decided for"
        " its contact"
    )


def refused(cur: Any, row: Row, reason: str) -> None:
    """A claimed message was refused before sending: its sequence stops there."""
    if row["campaign_id"] and row["contact_id"]:
        sequences.stop_in(cur, row["campaign_id"], row["contact_id"], f"refused: {reason}"[:200])


def thread_headers(cur: Any, row: Row) -> dict[str, str]:
    """A later email answers the earlier ones in the recipient's mail client: ``In-Reply-To``
    the previous email's Message-ID and ``References`` all of them (a task step has none)."""
    step = int(row["sequence_step"])
    if step < 2 or not row["campaign_id"] or not row["contact_id"]:
        return {}
    earlier = sequences.earlier_steps(cur, row["campaign_id"], row["contact_id"], step)
    ids = [str(e["message_id"]) for e in earlier if e["channel"] == EMAIL and e["message_id"]]
    return {"In-Reply-To": ids[-1], "References": " ".join(ids)} if ids else {}


def reply_subject(earlier: list[Row]) -> str | None:
    """The subject a later email takes so that it threads under the first one the contact
    received: ``Re: <its subject>`` (None: no email reached them yet)."""
    first = next((e for e in earlier if e["channel"] == EMAIL and e["status"] in SENT), None)
    if first is None or not first["subject"]:
        return None
    subject = str(first["subject"])
    return subject if subject.lower().startswith("re:") else REPLY_PREFIX + subject


def thread(earlier: list[Row]) -> list[dict[str, Any]]:
    """Steps 1..n-1 as AGT-005 reads them (the ``thread`` of its prompt, oldest first): how
    each reached the contact, what it said, how it fared and on which day (the row's ``id``
    is recorded in the call's provenance, not shown to the model)."""
    return [
        {
            "id": str(e["id"]),
            "step": int(e["step"]),
            "channel": e["channel"] or EMAIL,
            "subject": e["subject"],
            "text": e["text"],
            "outcome": e["status"],
            "on": e["at"].date().isoformat() if isinstance(e["at"], datetime) else None,
        }
        for e in earlier
    ]
