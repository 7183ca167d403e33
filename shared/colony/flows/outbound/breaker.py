"""The circuit breaker (CONST-005; issue 39 item 4): campaigns, sending mailboxes and sending
domains paused for their bounce or complaint rates, and resumed only by a person.

    a bounce or a complaint (refused at send, or reported by the provider)
        ─► ``judge`` (in the same transaction)
            campaign: its rates since its last resume (``outbox.rates``) over the campaign's
                thresholds ─► paused: its runs stop taking work, its queued mail is blocked
            mailbox (the From address) and domain: their rates over ``WINDOW_DAYS``
                (``store.outbound.bounces.rates``, PostgreSQL: the same for every instance)
                over ``SENDER_BOUNCE`` / ``SENDER_COMPLAINT`` ─► paused (``sender_pauses``):
                its mail waits at send (deferred, never dropped)
        ─► a trip is reported once (Sentry's ``circuit_breaker``) and raised on /overview
           (``alerts``)
    a person (an org admin: the admin API, or /overview's button) ─► ``resume``: audited;
        a campaign is handed to the campaign-resume task (its runs and blocked mail go on);
        a sender's mail goes at its next try; the rates start again from the resume

Before issue 39 a paused campaign resumed by itself 24 hours later, whatever had caused the
trip; now nothing resumes until a person has looked (people hold authority).
"""

from __future__ import annotations

from typing import Any, Literal

from colony.contracts.events import CampaignResume
from colony.errors import Conflict, NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.observability import categories
from colony.registry.functions import CAMPAIGN_RESUME_QUEUE
from colony.runtime.transport import enqueue
from colony.store.approvals import audit
from colony.store.campaigns import campaigns
from colony.store.outbound import bounces, outbox, sender_pauses

MIN_SAMPLE = 10  # messages that left before a campaign's rate can trip the breaker
SENDER_MIN_SAMPLE = 20  # ... a mailbox's or a domain's, over the window
WINDOW_DAYS = 7
SENDER_BOUNCE = 0.05  # Google and Yahoo's bulk sender guidance: bounces well under 5%
SENDER_COMPLAINT = 0.003  # ... and spam complaints under 0.3%
Kind = Literal["campaign", "mailbox", "domain"]
KINDS: tuple[str, ...] = ("campaign", "mailbox", "domain")


class NotPaused(Conflict):
    """What a person asked to resume is not paused (resumed already, or never paused)."""

    code = "not_paused"


def judge(cur: Any, org_id: str, campaign_id: str | None, sender: str | None) -> dict[str, Any]:
    """Judge the campaign's and the sender's rates after a bounce or a complaint; what
    tripped (``paused``, ``paused_runs``, ``paused_senders``)."""
    outcome: dict[str, Any] = _campaign(cur, campaign_id) if campaign_id else {}
    if sender and "@" in sender:
        tripped = [
            key
            for scope, key in (("mailbox", sender), ("domain", sender.rpartition("@")[2]))
            if _sender(cur, org_id, scope, key)  # type: ignore[arg-type]  # the two scopes
        ]
        if tripped:
            outcome["paused_senders"] = tripped
    return outcome


def _campaign(cur: Any, campaign_id: str) -> dict[str, Any]:
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
        sender_pauses.set_campaign_reason(cur, campaign_id, reason)
        result.update(paused=True, reason=reason, paused_runs=paused)
    return result


def _sender(cur: Any, org_id: str, scope: Literal["mailbox", "domain"], key: str) -> bool:
    rates = bounces.rates(cur, scope, key, WINDOW_DAYS)
    judged = int(rates["judged"])
    if judged < SENDER_MIN_SAMPLE:
        return False
    bounce, complaint = rates["bounced"] / judged, rates["complained"] / judged
    if bounce <= SENDER_BOUNCE and complaint <= SENDER_COMPLAINT:
        return False
    reason = (
        f"bounce {bounce:.1%}, complaints {complaint:.2%} over {judged} messages in"
        f" {WINDOW_DAYS} days"
    )
    return sender_pauses.pause(
        cur, org_id, scope, key, reason, judged=judged, bounce_rate=bounce, complaint_rate=complaint
    )


def report(org_id: str, campaign_id: str | None, outcome: dict[str, Any]) -> None:
    """Report a trip this transaction made (committed), once: worth a person's look."""
    if not outcome.get("paused") and not outcome.get("paused_senders"):
        return
    runs = list(outcome.get("paused_runs") or ())
    tags = {
        "paused_runs": str(len(runs)),
        "paused_senders": str(len(outcome.get("paused_senders") or ())),
    }
    if campaign_id:
        tags["campaign_id"] = str(campaign_id)
    categories.report(
        "circuit_breaker",
        org_id=org_id,
        run_id=runs[0] if len(runs) == 1 else None,
        agent_id="AGT-002",  # the campaign's runs are AGT-002's
        tags=tags,
    )


def held_by(cur: Any, mail_from: str) -> str | None:
    """Why mail from ``mail_from`` waits (its mailbox or its domain is paused), or None."""
    row = sender_pauses.paused_for(cur, mail_from)
    if row is None:
        return None
    return (
        f"sending from {row['sender']} is paused by the breaker ({row['reason']});"
        " a person resumes it on /overview"
    )


def resume(
    deps: FlowDeps, org_id: str, kind: str, target: str, actor: str, channel: audit.Channel
) -> dict[str, Any]:
    """A person resumes a paused campaign, mailbox or domain; audited. ``NotFound`` for a
    campaign not in this org, ``NotPaused`` for what is not paused."""
    if kind not in KINDS:
        raise ValidationFailed(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    target = target.strip()
    if not target or len(target) > 320:
        raise ValidationFailed("the target to resume is missing or too long")
    with deps.db.transaction(org_id) as cur:
        if kind == "campaign":
            state = campaigns.pause_state(cur, target)
            if state is None:
                raise NotFound(f"campaign {target!r} does not exist in this org")
            if state["status"] != "paused" or state["paused_at"] is None:
                raise NotPaused(f"campaign {target!r} is not paused")
            sender_pauses.campaign_resumed_by(cur, target, actor)
            paused_at = int(state["paused_at"].timestamp())
        else:
            row = sender_pauses.resume(cur, kind, target, actor)
            if row is None:
                raise NotPaused(f"sending from {target!r} is not paused")
        entry = audit.Entry(
            "decision", actor, channel, "sending_resumed", detail={"kind": kind, "target": target}
        )
        audit.append(cur, org_id, entry)
    if kind == "campaign":  # the task moves its runs and its blocked mail on, once per pause
        enqueue(
            deps.transport,
            CAMPAIGN_RESUME_QUEUE,
            CampaignResume(org_id=org_id, campaign_id=target),
            task_id=f"resume-{target}-{paused_at}",
            delay_seconds=0,
        )
    return {"kind": kind, "target": target, "status": "resumed", "resumed_by": actor}


def alerts(deps: FlowDeps, org_id: str) -> list[dict[str, Any]]:
    """/overview's breaker alerts: each paused campaign and sender, why, and what resumes it."""
    with deps.db.transaction(org_id) as cur:
        paused_campaigns = sender_pauses.paused_campaigns(cur)
        senders = sender_pauses.paused(cur)
    found = [
        {
            "kind": "campaign_paused",
            "message": f"Campaign {row['name']!r} is paused: {row['pause_reason'] or 'paused'}."
            " Its mail waits until a person resumes it.",
            "resume": {"kind": "campaign", "target": row["id"]},
        }
        for row in paused_campaigns
    ]
    found += [
        {
            "kind": f"{row['scope']}_paused",
            "message": f"Sending from {row['sender']} is paused by the breaker: {row['reason']}."
            " Its mail waits until a person resumes it.",
            "resume": {"kind": row["scope"], "target": row["sender"]},
        }
        for row in senders
    ]
    return found
