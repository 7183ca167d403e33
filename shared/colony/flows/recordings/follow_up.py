"""AGT-007 Post-Call Follow-up (SPEC §6.3): a recap email for the deal's contact, drafted
from AGT-006's summary of the call, into the approval queue; approved, it goes to the outbox.

    colony-follow-up (``RecordingProcessed``) ─► ``follow_up_event``: the summary, its
        competitors redacted (CONST-006), fitted to the task budget ─► KC-05/KC-04 grounding
        ─► the draft, checked in full (sentences, subject, the org's competitors) ─► a
        ``follow_up`` approval item (a durable step: a redelivery drafts nothing twice)
    approved ─► ``apply_follow_up``: the outbox, once, and the send queue; the call's
        summary logged in the org's HubSpot, if connected (``flows.crm.engagements``)

A deal with no contact is ``missing_data`` (CONST-004): nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.context.tokens import counter_for
from colony.contracts.events import RecordingProcessed
from colony.contracts.outputs.recordings import FollowUpDraft
from colony.errors import ValidationFailed
from colony.flows import call_link
from colony.flows.approvals import flags
from colony.flows.crm import engagements
from colony.flows.deps import FlowDeps
from colony.flows.outbound.sending import schedule_send
from colony.flows.recordings.recording import (
    COMPETITORS,
    EXEMPLARS_PER_DOMAIN,
    deal_facts,
    org_context_of,
    recording_row,
)
from colony.flows.tenants import org_admin
from colony.knowledge.exemplars import to_exemplars
from colony.llm.agent_call import call_agent
from colony.policy.outbound import (
    check_shape,
    competitor_mentions,
    redact_competitors,
    split_sentences,
)
from colony.runtime import idempotency
from colony.runtime.steps import step
from colony.store.approvals import approvals
from colony.store.deals import deals
from colony.store.outbound import outbox

FOLLOW_UP_TIER = "T3"  # a follow-up's CONST-006 sentence limit (a deal carries no tier)


def follow_up_event(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    if not isinstance(event, RecordingProcessed):
        raise ValidationFailed(f"AGT-007 does not take {type(event).__name__} events")
    org, recording_id = event.org_id, event.recording_id
    handler = "follow-up"
    if idempotency.seen(deps.db, org, handler, event_id):
        return {"duplicate": True}
    with deps.db.transaction(org) as cur:
        recording = recording_row(cur, recording_id)
        deal = deals.with_contact(cur, recording["deal_id"]) if recording["deal_id"] else None
        org_context = org_context_of(cur)
    if recording["status"] != "processed" or not recording["summary"]:
        raise ValidationFailed(f"recording {recording_id!r} has not been analysed")
    if deal is None or not deal["contact_name"]:
        # CONST-004: no contact to write to; the follow-up is not guessed.
        idempotency.mark(deps.db, org, handler, event_id, detail="missing_data: contact")
        return {"missing_data": ["contact"]}
    run_id = f"rec:{recording_id}"
    planted = list(recording.get("untrusted_instructions") or ())  # found in its transcript

    def compute() -> dict[str, Any]:
        return _draft(deps, org, run_id, org_context, recording, deal)

    def apply(cur: Any, stored: Mapping[str, Any]) -> None:
        output, call_id = call_link.take(stored)
        payload = {
            **output,
            "recording_id": recording_id,
            "deal_id": deal["id"],
            "contact_id": deal["contact_id"],
            "to": deal["contact_email"],
        }
        payload = flags.flagged(payload, planted)
        approvals.add(
            cur,
            org,
            "follow_up",
            "AGT-007",
            payload,
            subject_id=deal["contact_id"],
            run_id=run_id,
            call_id=call_id,
        )

    draft = step(deps.db, org, run_id, "follow_up", compute, apply)
    idempotency.mark(deps.db, org, handler, event_id)
    return {"subject": draft["subject"]}


def _draft(
    deps: FlowDeps,
    org: str,
    run_id: str,
    org_context: Any,
    recording: Mapping[str, Any],
    deal: Mapping[str, Any],
) -> dict[str, Any]:
    # CONST-006: the recap quotes the customer, who may name a competitor; the email must not.
    competitors = org_admin.competitors(deps, org, COMPETITORS)
    summary = redact_competitors(str(recording["summary"]), competitors, "another vendor")
    summary = _fit(deps, summary)
    hits = deps.knowledge.retrieve(org, summary, ("KC-05", "KC-04"), EXEMPLARS_PER_DOMAIN)
    exemplars = to_exemplars(hits)
    contact = {
        "name": deal["contact_name"],
        "title": deal["contact_title"],
        "company": deal["contact_company"],
    }
    deal_view = deal_facts(deal)
    request = AssemblyRequest(
        "AGT-007",
        org,
        run_id,
        org_context,
        exemplars,
        {"deal": deal_view, "contact": contact},
        task={"recording_summary": summary},
        kc_queried=tuple(hits),
    )

    def const_006(m: Any) -> list[str]:  # in full: sentences, subject, the org's competitors
        return check_shape(m.subject, m.body, tier=FOLLOW_UP_TIER, competitors=competitors)

    result = call_agent(deps.llm, request, check=const_006)
    assert isinstance(result.output, FollowUpDraft)
    output = result.output.model_dump(mode="json")
    found = flags.of_draft(result, output, allowed=[deal.get("contact_email") or ""])
    return call_link.carry(flags.flagged(output, found), result)


def _fit(deps: FlowDeps, summary: str) -> str:
    """The call summary within AGT-007's task budget, cut at a sentence where it must be."""
    room = deps.llm.budgets.for_profile("AGT-007").task - 80  # the template's own words
    tokens = counter_for(deps.llm.model)
    if tokens.count(summary) <= room:
        return summary
    kept: list[str] = []
    for sentence in split_sentences(summary):
        if tokens.count(" ".join([*kept, sentence])) > room:
            break
        kept.append(sentence)
    return " ".join(kept) or tokens.truncate(summary, room)


def apply_follow_up(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """Approval applier for ``follow_up``: the approved draft goes to the outbox, once, and
    the call's summary to the org's HubSpot (a push per recording: once)."""
    subject, body = payload.get("subject"), payload.get("body")
    if not isinstance(subject, str) or not subject.strip() or not isinstance(body, str):
        raise ValidationFailed("a follow-up needs a subject and a body")
    if competitor_mentions(f"{subject}\n{body}", org_admin.competitors(deps, org_id, COMPETITORS)):
        raise ValidationFailed("the follow-up names a competitor (CONST-006)")
    to = payload.get("to")
    outbox_id = outbox.queue(
        cur,
        org_id,
        item_id,
        contact_id=payload.get("contact_id"),
        subject=subject,
        body=body,
        to=to if isinstance(to, str) else None,
    )
    schedule_send(deps, org_id, outbox_id)
    recording_id = payload.get("recording_id")
    if isinstance(recording_id, str) and recording_id:
        # the call's summary, logged on the contact and deal in the org's HubSpot: a model's
        # words leave only once a person has acted on the call's outcome (this approval)
        engagements.log_later(deps, cur, org_id, "call", recording_id)
