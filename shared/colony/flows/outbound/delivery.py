"""Delivery events (SPEC §6.2) and what they tell the circuit breaker (CONST-005).

An ESP reports delivered / bounced / complained / replied for outbox messages. Each event
(idempotent on its id, recorded in the same transaction as its effects) moves the message
forward, never back (a late "delivered" cannot erase a bounce). A bounce comes classified by
its codes (``bounces.reported``: a transient one is counted, and only bounces the message once
its address's soft bounces are exhausted); a bounce or a complaint suppresses the address and
has the campaign's, the mailbox's and the domain's rates judged (``breaker.judge``): crossing
a threshold pauses them until a person resumes them (``breaker.resume``; nothing resumes by
itself). A trip is reported to Sentry as the ``circuit_breaker`` category, once: only the
event whose transaction paused it reports it.

An event that moves the message forward is also its KC-08 exemplar's outcome
(``colony.knowledge.outcomes``): ``replied`` with the reply's sentiment when it is known, so
the next campaign in the angle writes from the messages that were answered.
"""

from __future__ import annotations

from typing import Any, Literal

from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.outbound import bounces, breaker, sequences
from colony.knowledge import outcomes as exemplar_outcomes
from colony.policy.bounces import Bounce
from colony.store import processed_events
from colony.store.knowledge import provenance
from colony.store.outbound import outbox, suppressions

DeliveryEvent = Literal["delivered", "bounced", "complained", "replied"]
EVENTS: tuple[str, ...] = ("delivered", "bounced", "complained", "replied")
HANDLER = "delivery-events"


def record(
    deps: FlowDeps,
    org_id: str,
    outbox_id: str,
    event: DeliveryEvent,
    event_id: str,
    *,
    sentiment: str | None = None,
    bounce: Bounce | None = None,
) -> dict[str, Any]:
    """Record one delivery event (``sentiment``: a reply's, ``colony.policy.replies``;
    ``bounce``: a ``bounced`` event's classification, when the report carried one)."""
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
        elif bounce is not None and not bounces.reported(cur, org_id, outbox_id, bounce):
            outcome = {"outbox_id": outbox_id, "status": message["status"], "soft_bounce": True}
            outcome["bounce"] = {"code": bounce.code, "class": bounce.klass}
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
            harm = event in ("bounced", "complained")  # what the sender's rates count
            if campaign_id or harm:
                sender = message["sender_address"] if harm else None
                outcome.update(breaker.judge(cur, org_id, campaign_id, sender))
    breaker.report(org_id, campaign_id, outcome)  # a trip this event made (committed)
    return outcome
