"""Delivery events and the circuit breaker (CONST-005; SPEC §6.2).

An ESP reports delivered / bounced / complained / replied for outbox messages. Each event
(idempotent on its id, recorded in the same transaction as its effects) moves the message
forward, never back (a late "delivered" cannot erase a bounce), then the campaign's bounce and
complaint rates since its last resume are judged; crossing a threshold with enough messages
to judge pauses the campaign: its running runs stop taking new work, queued outbox rows are
blocked, and a Cloud Tasks resume is scheduled, named by the pause so that every pause gets
its own resume and a redelivered event never schedules a second one. A trip is reported to
Sentry as the ``circuit_breaker`` category (tagged with the org and the campaign), once: only
the event whose transaction paused the campaign reports it.

An event that moves the message forward is also its KC-08 exemplar's outcome
(``colony.knowledge.outcomes``): ``replied`` with the reply's sentiment when it is known, so
the next campaign in the angle writes from the messages that were answered.
"""

from __future__ import annotations

from typing import Any, Literal

from colony.contracts.events import CampaignResume
from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.outbound import sequences
from colony.knowledge import outcomes as exemplar_outcomes
from colony.observability import categories
from colony.registry.functions import CAMPAIGN_RESUME_QUEUE
from colony.runtime.transport import enqueue
from colony.store import processed_events
from colony.store.campaigns import campaigns
from colony.store.knowledge import provenance
from colony.store.outbound import outbox, suppressions

DeliveryEvent = Literal["delivered", "bounced", "complained", "replied"]
EVENTS: tuple[str, ...] = ("delivered", "bounced", "complained", "replied")
MIN_SAMPLE = 10  # messages that left before a rate can trip the breaker
RESUME_AFTER_SECONDS = 24 * 3600
HANDLER = "delivery-events"


def record(
    deps: FlowDeps,
    org_id: str,
    outbox_id: str,
    event: DeliveryEvent,
    event_id: str,
    *,
    sentiment: str | None = None,
) -> dict[str, Any]:
    """Record one delivery event (``sentiment``: a reply's, ``colony.policy.replies``)."""
    if event not in EVENTS:
        raise ValidationFailed(f"unknown delivery event {event!r}; expected {', '.join(EVENTS)}")
    exemplar_outcome = f"replied_{sentiment}" if event == "replied" and sentiment else event
    outcome: dict[str, Any]
    with deps.db.transaction(org_id) as cur:
        message = outbox.message(cur, outbox_id)
        if message is None:
            raise NotFound(f"outbox message {outbox_id!r} does not exist in this org")
        campaign_id = message["campaign_id"]
        if not processed_events.mark(cur, org_id, HANDLER, event_id, detail=event):
            outcome = {"duplicate": True}
        elif not outbox.set_status(cur, outbox_id, event):
            outcome = {"outbox_id": outbox_id, "status": message["status"], "ignored": event}
        else:
            outcome = {"outbox_id": outbox_id, "status": event}
            if message["approval_item_id"]:
                item_id = str(message["approval_item_id"])
                exemplar_outcomes.record(cur, org_id, item_id, exemplar_outcome)
                # The outcome also credits the chunks that grounded the draft (issue 19 §5).
                provenance.credit_item_outcome(cur, item_id, exemplar_outcome)
            if event in ("bounced", "complained"):  # never mail this address again
                address = outbox.address_of(cur, outbox_id)
                if address:
                    suppressions.add(cur, org_id, address, event)
            if event != "delivered" and message["contact_id"]:  # the sequence ends here
                sequences.stop_contacts(cur, [message["contact_id"]], event)
            if campaign_id:
                outcome.update(_breaker(cur, campaign_id))
        paused = campaigns.pause_state(cur, campaign_id) if campaign_id else None
    if outcome.get("paused"):  # this event tripped it (committed): worth a person's look
        runs = list(outcome.get("paused_runs") or ())
        categories.report(
            "circuit_breaker",
            org_id=org_id,
            run_id=runs[0] if len(runs) == 1 else None,
            agent_id="AGT-002",  # the campaign's runs are AGT-002's
            tags={"campaign_id": str(campaign_id), "paused_runs": str(len(runs))},
        )
    if paused and paused["status"] == "paused" and paused["paused_at"] is not None:
        # Every event of a paused campaign re-asks for its resume: the task name is the
        # pause's, so this is created once, even after a crash right after the pause.
        resume = CampaignResume(org_id=org_id, campaign_id=campaign_id)
        enqueue(
            deps.transport,
            CAMPAIGN_RESUME_QUEUE,
            resume,
            task_id=f"resume-{campaign_id}-{int(paused['paused_at'].timestamp())}",
            delay_seconds=RESUME_AFTER_SECONDS,
        )
    return outcome


def _breaker(cur: Any, campaign_id: str) -> dict[str, Any]:
    campaign = campaigns.get(cur, campaign_id)
    rates = outbox.rates(cur, campaign_id)
    if campaign is None or rates is None or rates["judged"] < MIN_SAMPLE:
        return {}
    bounce = rates["bounced"] / rates["judged"]
    complaint = rates["complained"] / rates["judged"]
    result: dict[str, Any] = {
        "bounce_rate": round(bounce, 4),
        "complaint_rate": round(complaint, 4),
    }
    tripped = bounce > float(campaign["bounce_threshold"]) or complaint > float(
        campaign["complaint_threshold"]
    )
    if tripped and campaign["status"] == "active":
        reason = f"circuit breaker: bounce {bounce:.1%}, complaints {complaint:.2%}"
        paused = campaigns.pause(cur, campaign_id, reason)
        result.update(paused=True, reason=reason, paused_runs=paused)
    return result
