"""Delivery events and the circuit breaker (CONST-005; SPEC §6.2).

An ESP reports delivered / bounced / complained / replied for outbox messages. Each event
(idempotent on its id) updates the message, then the campaign's bounce and complaint rates;
crossing a threshold (with enough messages to judge) pauses the campaign: its runs stop
taking new work, queued outbox rows are blocked, and a Cloud Tasks resume is scheduled.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from colony.contracts.events import CampaignResume
from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.runtime import idempotency
from colony.store import campaigns as sql
from colony.store import fetch_all, fetch_one

DeliveryEvent = Literal["delivered", "bounced", "complained", "replied"]
EVENTS: tuple[str, ...] = ("delivered", "bounced", "complained", "replied")
MIN_SAMPLE = 10  # messages with an outcome before a rate can trip the breaker
RESUME_AFTER_SECONDS = 24 * 3600
RESUME_QUEUE = "colony-campaign-resume"

SET_STATUS = """
UPDATE outbox SET status = %s, updated_at = now() WHERE id = %s RETURNING campaign_id
"""
RATES = """
SELECT count(*) FILTER (WHERE status IN ('delivered', 'bounced', 'complained', 'replied'))
           AS judged,
       count(*) FILTER (WHERE status = 'bounced') AS bounced,
       count(*) FILTER (WHERE status = 'complained') AS complained
FROM outbox WHERE campaign_id = %s
"""


def record(
    deps: FlowDeps, org_id: str, outbox_id: str, event: DeliveryEvent, event_id: str
) -> dict[str, Any]:
    if event not in EVENTS:
        raise ValidationFailed(f"unknown delivery event {event!r}; expected {', '.join(EVENTS)}")
    if idempotency.seen(deps.db, org_id, "delivery-events", event_id):
        return {"duplicate": True}
    with deps.db.transaction(org_id) as cur:
        row = fetch_one(cur, SET_STATUS, (event, outbox_id))
        if row is None:
            raise NotFound(f"outbox message {outbox_id!r} does not exist in this org")
        campaign_id = row["campaign_id"]
        outcome: dict[str, Any] = {"outbox_id": outbox_id, "status": event}
        if campaign_id:
            outcome.update(_breaker(deps, cur, org_id, campaign_id))
    idempotency.mark(deps.db, org_id, "delivery-events", event_id)
    for run_id in outcome.get("paused_runs", []):
        resume = CampaignResume(org_id=org_id, run_id=run_id)
        deps.transport.schedule(
            RESUME_QUEUE, "campaign-resume",
            json.dumps(resume.model_dump(mode="json")).encode(),
            task_id=f"resume-{run_id}", delay_seconds=RESUME_AFTER_SECONDS,
        )  # fmt: skip
    return outcome


def _breaker(deps: FlowDeps, cur: Any, org_id: str, campaign_id: str) -> dict[str, Any]:
    campaign = fetch_one(cur, sql.CAMPAIGN, (campaign_id,))
    rates = fetch_one(cur, RATES, (campaign_id,))
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
        cur.execute(sql.PAUSE_CAMPAIGN, (campaign_id,))
        paused = fetch_all(cur, sql.PAUSE_RUNS, (reason, campaign_id))
        cur.execute(sql.BLOCK_OUTBOX, (campaign_id,))
        result.update(paused=True, reason=reason, paused_runs=[r["id"] for r in paused])
    return result
