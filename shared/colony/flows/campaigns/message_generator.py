"""AGT-005 Message Generator: draft each step of a contact's sequence as the org wrote it,
checked by the outbound policy, and queue it for approval.

Step 1 comes from the campaign run's handoff (the contact's chain ends with it, and the
contact is enrolled in its sequence: ``colony.flows.outbound.sequences``); each later step comes
from its ``SequenceStep`` task once the step before was done, and is written knowing steps
1..n-1 (what each said, how each fared: the prompt's ``thread``).

What a step is comes from the library: its channel and the org's guidance go into the task.
It is written in the tier AGT-004 decided for the contact (the campaign's tier is only the
default, for a contact without a decision). An email step is an ``outbound_message`` item; a
later email takes the first email's subject ("Re: …") so it threads under it. A LinkedIn or
call step is a ``sequence_task`` item: the talking points for a person, never sent by us.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from colony.contracts import HandoffEnvelope
from colony.contracts.events import SequenceStep
from colony.contracts.outputs.campaigns import OutboundMessage
from colony.flows import call_link
from colony.flows.approvals import approval, flags
from colony.flows.campaigns.campaign import HINTS, contact_done, step_key
from colony.flows.campaigns.specialist import (
    assembly_request,
    handle_handoff,
    known_signals,
    load_contact,
    missing_data_done,
)
from colony.flows.deps import FlowDeps
from colony.flows.outbound import sequences
from colony.flows.tenants import budget, org_admin
from colony.llm.agent_call import call_agent
from colony.policy.outbound import check_outbound
from colony.registry.agents import AGENTS
from colony.registry.functions import AGENT_TOPICS
from colony.runtime import idempotency
from colony.runtime.steps import step
from colony.store import steps as run_steps
from colony.store.approvals import approvals
from colony.store.campaigns import signals
from colony.store.db import Row
from colony.store.outbound import sequences as enrollments

DEFAULT_COMPETITORS = org_admin.DEFAULT_COMPETITORS
SEQUENCE_HANDLER = "message-generator.sequence"
NO_GUIDANCE = "(none)"


@dataclass(frozen=True)
class Draft:
    """What one step's draft is written from: the contact and its signals
    (``known_signals``), the step as the library wrote it, the sequence it belongs to, what
    the contact already got and, for a later email, the subject it threads under."""

    contact: Row
    known: list[Row]
    step: sequences.Step
    library: sequences.Library
    thread: list[dict[str, Any]] = field(default_factory=list)
    reply_subject: str | None = None


def write_message(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """The ``message-generator`` function's Pub/Sub handler."""
    if isinstance(event, SequenceStep):
        return write_step(deps, event, event_id)
    return handle_handoff(deps, event, event_id, "AGT-005", _message)


def _message(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, envelope: HandoffEnvelope
) -> str:
    contact, known = known_signals(deps, org, load_contact(deps, org, contact_id))
    missing = _missing(contact, known)
    if missing:  # CONST-004: never guess; the contact ends with missing data, shown on a card
        fields = [f"contact.{f}" for f in missing]
        return missing_data_done(deps, org, campaign, run_id, contact_id, "AGT-005", fields)
    with deps.db.transaction(org) as cur:
        tier = decided_tier(cur, run_id, contact_id) or envelope.tier
        walked = sequences.library(cur, envelope.angle, tier, envelope.tier)
    envelope = envelope.model_copy(update={"tier": tier})

    def enroll(cur: Any) -> None:
        sequences.enroll(cur, org, campaign["id"], contact_id, run_id, tier, walked)

    key = step_key("AGT-005", contact_id)
    draft = Draft(contact, known, walked.step(1), walked)
    _draft(deps, org, campaign["id"], run_id, key, draft, envelope, enroll)
    contact_done(deps, org, run_id, contact_id, "message_queued")
    return "message_queued"


def decided_tier(cur: Any, run_id: str, contact_id: str) -> str | None:
    """The tier policy decided for the contact when AGT-004 scored it in this run (None: no
    decision on record, so the campaign's tier stands)."""
    scored = run_steps.get(cur, run_id, step_key("AGT-004", contact_id))
    output = scored["output"] if scored and scored["status"] == "done" else None
    tier = output.get("tier") if isinstance(output, Mapping) else None
    return str(tier) if tier else None


def write_step(deps: FlowDeps, event: SequenceStep, event_id: str) -> dict[str, Any]:
    """Draft step ``event.step`` of the contact's sequence, once, if it still stands."""
    org, n = event.org_id, event.step
    if idempotency.seen(deps.db, org, SEQUENCE_HANDLER, event_id):
        return {"duplicate": True}
    with deps.db.transaction(org) as cur:
        standing = sequences.standing(cur, event)
        if isinstance(standing, str):  # stopped, or drafted already
            walked = None
        else:  # the library's sequence the contact was enrolled in
            walked = sequences.library(cur, standing[0]["angle"], standing[0]["sequence_tier"])
    if isinstance(standing, str) or walked is None:
        idempotency.mark(deps.db, org, SEQUENCE_HANDLER, event_id, detail=str(standing)[:200])
        return {"skipped": standing, "step": n}
    enrollment, earlier = standing
    contact, known = known_signals(deps, org, load_contact(deps, org, event.contact_id))
    if _missing(contact, known):
        with deps.db.transaction(org) as cur:
            enrollments.stop_in(cur, event.campaign_id, event.contact_id, "missing_data")
        idempotency.mark(deps.db, org, SEQUENCE_HANDLER, event_id, detail="missing_data")
        return {"skipped": "missing_data", "step": n}
    run_id = str(enrollment["run_id"])
    envelope = HandoffEnvelope(
        parent_run_id=run_id,
        downstream_agent=AGENTS["AGT-005"].slug,
        entity_ids=[event.contact_id],
        angle=enrollment["angle"],
        tier=enrollment["tier"],
        kc_bucket_hints=HINTS["AGT-005"],  # type: ignore[arg-type]  # registry ids
    )

    def advance(cur: Any) -> None:
        enrollments.advance(cur, event.campaign_id, event.contact_id, n)

    plan = walked.step(n)
    reply = None if plan.task else sequences.reply_subject(earlier)
    draft = Draft(contact, known, plan, walked, sequences.thread(earlier), reply)
    key = f"message:{event.contact_id}:{n}"
    waits = _held(deps, event, run_id, key)
    if waits is not None:
        idempotency.mark(deps.db, org, SEQUENCE_HANDLER, event_id, detail="held: budget")
        return {"held": waits, "step": n}
    _draft(deps, org, event.campaign_id, run_id, key, draft, envelope, advance)
    idempotency.mark(deps.db, org, SEQUENCE_HANDLER, event_id)
    if plan.task:  # a person does it (or skips it): no approval covers a task
        return {"drafted": n, "channel": plan.channel, "approval": "a person does the task"}
    return {"drafted": n, "channel": plan.channel, **_covered(deps, org, event, run_id)}


def _held(deps: FlowDeps, event: SequenceStep, run_id: str, key: str) -> str | None:
    """Hold the step while the org's budget holds campaign work back, unless it has started
    already (a redelivery of a step in flight, or done): why it waits, or None."""
    with deps.db.transaction(event.org_id) as cur:
        if run_steps.get(cur, run_id, key) is not None:
            return None
        return budget.hold_if_capped(
            cur,
            event.org_id,
            run_id=run_id,
            step_key=key,
            campaign_id=event.campaign_id,
            topic=AGENT_TOPICS["AGT-005"],
            event=event.model_dump(mode="json"),
        )


def _covered(deps: FlowDeps, org: str, event: SequenceStep, run_id: str) -> dict[str, Any]:
    """Approve the drafted email step on behalf of the person who approved step 1, when the
    org's settings say one approval covers the sequence and nothing in the draft is flagged."""
    with deps.db.transaction(org) as cur:
        enrollment = enrollments.get(cur, event.campaign_id, event.contact_id)
        approver = sequences.covering_approver(cur, enrollment) if enrollment else None
        item = enrollments.step_item(cur, run_id, event.campaign_id, event.contact_id, event.step)
    if approver is None or item is None or item["kind"] != "outbound_message":
        return {"approval": "a person decides"}
    if item["payload"].get(flags.KEY):  # flagged: a person looks at it
        return {"approval": "flagged: a person decides"}
    actor = approval.Actor(approver, "sequence")
    approval.decide(deps, org, str(item["id"]), "approve", actor=actor)
    return {"approval": f"covered by {approver}'s approval of step 1"}


def _missing(contact: Row, known: list[Row]) -> list[str]:
    return [f for f, ok in (("name", contact.get("name")), ("signals", known)) if not ok]


def _persona(contact: Row) -> str | None:
    """AGT-003's persona for the contact (tagged on the message's KC-08 exemplar)."""
    persona = (contact.get("enrichment") or {}).get("persona")
    return str(persona) if persona else None


def _draft(
    deps: FlowDeps,
    org: str,
    campaign_id: str,
    run_id: str,
    key: str,
    draft: Draft,
    envelope: HandoffEnvelope,
    also: Callable[[Any], None],
) -> None:
    """Step ``draft.step`` of the contact's sequence as a durable step ``key`` of ``run_id``:
    drafted, checked and queued for approval, a message or a task for a person (``also``
    runs in the same transaction)."""
    contact, plan = draft.contact, draft.step
    contact_id = str(contact["id"])
    details = signals.details(draft.known)
    competitors = org_admin.competitors(deps, org, DEFAULT_COMPETITORS)
    tier = envelope.tier
    # The competitor list is in the prompt: a model can only avoid the names it is given.
    task: dict[str, Any] = {
        "angle": envelope.angle,
        "tier": tier,
        "step": plan.number,
        "channel": plan.channel,
        "guidance": plan.guidance or NO_GUIDANCE,
        "competitors": list(competitors),
    }

    def compute() -> dict[str, Any]:
        request = assembly_request(
            deps,
            org,
            run_id,
            "AGT-005",
            envelope,
            {"contact": contact},
            task,
            signals=draft.known,
            sequence=draft.library.as_context(),
            thread=draft.thread,
        )

        def problems(m: Any) -> list[str]:
            return check_outbound(m, tier=tier, contact_signals=details, competitors=competitors)

        result = call_agent(deps.llm, request, check=problems)
        assert isinstance(result.output, OutboundMessage)
        output = result.output.model_dump(mode="json")
        if draft.reply_subject:  # threads under the first email in the recipient's client
            output["subject"] = draft.reply_subject
        to = str(contact.get("email") or "")
        own = [str(contact.get("company_domain") or "")]
        found = flags.of_draft(result, output, allowed=[to], own_domains=own)
        # What the approval card shows as the exemplars the draft was written from: the ones
        # the assembler kept in the prompt, by domain and title (the text stays in KC).
        # KC-08 picks say how they were chosen (angle, angle+tier, fallback) and how they fared.
        used = [
            {
                "domain": e.domain,
                "title": e.title,
                "text": e.content[:200],
                **{k: e.tags[k] for k in ("selected_by", "outcome") if k in e.tags},
            }
            for e in result.assembled.bundle.knowledge_core_exemplars
        ]
        return call_link.carry({**flags.flagged(output, found), "exemplars": used}, result)

    def apply(cur: Any, stored: Mapping[str, Any]) -> None:
        output, call_id = call_link.take(stored)
        payload = {
            **output,
            "contact_id": contact_id,
            "campaign_id": campaign_id,
            "tier": tier,
            "angle": envelope.angle,
            "persona": _persona(contact),
            "to": None if plan.task else contact.get("email"),
            "sequence_step": plan.number,
            "channel": plan.channel,
            "guidance": plan.guidance,
        }
        kind = sequences.TASK_KIND if plan.task else "outbound_message"
        approvals.add(
            cur,
            org,
            kind,
            "AGT-005",
            payload,
            subject_id=contact_id,
            run_id=run_id,
            call_id=call_id,
        )
        also(cur)

    step(deps.db, org, run_id, key, compute, apply)
