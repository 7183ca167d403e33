"""Flow 2, the campaign run: AGT-002 run control (SPEC §6.2; seed §4.3, §4.4, §7.1).

    campaign.start ─► suppressed addresses skipped ─► anti-ICP filter (rules, no LLM)
        ─► handoff ─► AGT-003 enrich
        ─► AGT-004 qualify ─► qualified? ─► AGT-005 message ─► approval queue
                                └─ no ──► contact done

This module starts, resumes and counts runs; the specialists live in ``enrichment``,
``qualification`` and ``message_generator``. It calls no model, so the ``campaign`` and
``campaign-resume`` functions that import it carry no model SDK.

Every LLM call is a durable step keyed by (run, step); every contact ends in one ``done:``
step that counts it, and the run completes when all are counted. Handlers are idempotent on
their event id and re-publish freely: downstream steps absorb duplicates. A paused run does
no new work; resuming re-dispatches each unfinished contact, whose finished steps replay
from their stored outputs.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

from colony.contracts import HandoffEnvelope
from colony.contracts.events import CampaignResume, CampaignStart, Handoff
from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.outbound import postal_address
from colony.flows.outbound.sending import schedule_send
from colony.flows.tenants import budget
from colony.policy.anti_icp import match_rules
from colony.registry.agents import AGENTS
from colony.registry.functions import AGENT_TOPICS, CAMPAIGN_TOPIC
from colony.runtime import idempotency
from colony.runtime.steps import step
from colony.runtime.transport import publish
from colony.store import orgdata
from colony.store.campaigns import campaigns
from colony.store.db import Row
from colony.store.outbound import outbox, suppressions

# Bucket hints per downstream agent (seed §7.2): what each specialist should retrieve.
HINTS: dict[str, list[str]] = {
    "AGT-003": ["KC-03"],
    "AGT-004": ["KC-02"],
    "AGT-005": ["KC-08", "KC-04", "KC-07"],
}


# The chain each contact of a run goes through, as durable steps: AGT-002's anti-ICP filter
# (one step per run), then each specialist's step per contact, then ``done:<contact>``, which
# counts it. A handoff to a specialist is accepted only when the step it follows is done
# (``colony.flows.campaigns.specialist``): it is the next link of a chain this module started.
ANTI_ICP_STEP = "anti_icp"
STEPS: dict[str, str] = {"AGT-003": "enrich", "AGT-004": "qualify", "AGT-005": "message"}
FOLLOWS: dict[str, str] = {"AGT-004": "AGT-003", "AGT-005": "AGT-004"}  # AGT-003: anti_icp


def step_key(agent_id: str, contact_id: str) -> str:
    """The durable step specialist ``agent_id`` runs for one contact of a run."""
    return f"{STEPS[agent_id]}:{contact_id}"


def previous_step_key(agent_id: str, contact_id: str) -> str:
    """The step that must be done before a handoff of ``contact_id`` to ``agent_id``."""
    before = FOLLOWS.get(agent_id)
    return step_key(before, contact_id) if before else ANTI_ICP_STEP


def done_key(contact_id: str) -> str:
    """The step that counts a contact's chain as finished, once."""
    return f"done:{contact_id}"


# ─── campaign set-up (used by the CLI, chat tools and tests) ────────────────────────────


def create_campaign(
    deps: FlowDeps,
    org_id: str,
    *,
    name: str,
    angle: str,
    tier: str,
    contact_ids: list[str],
    bounce_threshold: float = 0.05,
    complaint_threshold: float = 0.003,
) -> str:
    with deps.db.transaction(org_id) as cur:
        campaign_id = campaigns.create(
            cur,
            org_id,
            name=name,
            angle=angle,
            tier=tier,
            bounce_threshold=bounce_threshold,
            complaint_threshold=complaint_threshold,
        )
        for contact_id in contact_ids:
            campaigns.add_contact(cur, org_id, campaign_id, contact_id)
    return campaign_id


def launch(deps: FlowDeps, org_id: str, campaign_id: str) -> str:
    """Publish a start event for a new run of ``campaign_id``; return the run id. Refused
    (``BudgetCapped``, saying why) while the org's spent budget holds campaign work back, and
    (``PostalAddressMissing``) while the org has no postal address for its mail's footer."""
    budget.check_launch(deps, org_id)
    postal_address.require(deps, org_id)
    run_id = f"run-{uuid.uuid4().hex[:16]}"
    event = CampaignStart(org_id=org_id, campaign_id=campaign_id, run_id=run_id)
    publish(deps.transport, CAMPAIGN_TOPIC, event)
    return run_id


# ─── AGT-002: start, resume, contact done ──────────────────────────────────────────────


def campaign_event(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """The ``campaign`` function's Pub/Sub handler."""
    if isinstance(event, CampaignStart):
        return start(deps, event, event_id)
    if isinstance(event, CampaignResume):
        return resume(deps, event, event_id)
    raise ValidationFailed(f"the campaign function does not take {type(event).__name__} events")


def start(deps: FlowDeps, event: CampaignStart, event_id: str) -> dict[str, Any]:
    org, run_id = event.org_id, event.run_id
    if idempotency.seen(deps.db, org, "campaign.start", event_id):
        return {"duplicate": True}
    with deps.db.transaction(org) as cur:
        campaign = campaigns.get(cur, event.campaign_id)
        if campaign is None:
            raise NotFound(f"campaign {event.campaign_id!r} does not exist in this org")
        contacts = campaigns.contacts(cur, event.campaign_id)
        suppressed = suppressions.suppressed_contacts(cur, [c["id"] for c in contacts])
        icp = orgdata.active_icp(cur)
        # A run launched while the campaign is paused waits for its resume (CONST-005).
        status = "paused" if campaign["status"] == "paused" else "running"
        campaigns.start_run(cur, run_id, org, event.campaign_id, status, len(contacts))

    rules = (icp or {}).get("anti_icp_rules") or []

    def anti_icp() -> dict[str, Any]:
        # CONST-002: deterministic rules, zero LLM tokens for disqualified contacts; and no
        # work at all for a contact whose address is suppressed (unsubscribed, bounced).
        return {
            "disqualified": {
                c["id"]: [m.rule_id for m in matches]
                for c in contacts
                if c["id"] not in suppressed and (matches := match_rules(as_prospect(c), rules))
            },
            "suppressed": sorted(suppressed),
        }

    def record_scores(cur: Any, output: Mapping[str, Any]) -> None:
        for contact_id, rule_ids in output["disqualified"].items():
            campaigns.set_score(cur, contact_id, 0, rule_ids, "disqualify")

    filtered = step(deps.db, org, run_id, ANTI_ICP_STEP, anti_icp, record_scores)
    disqualified = filtered["disqualified"]
    skipped = set(filtered.get("suppressed") or ())
    for contact in contacts:
        if contact["id"] in skipped:
            contact_done(deps, org, run_id, contact["id"], "suppressed")
        elif contact["id"] in disqualified:
            contact_done(deps, org, run_id, contact["id"], "anti_icp")
        else:
            handoff(deps, org, campaign, run_id, contact["id"], "AGT-003")
    with deps.db.transaction(org) as cur:
        campaigns.complete_if_done(cur, run_id)  # e.g. every contact was anti-ICP
    idempotency.mark(deps.db, org, "campaign.start", event_id)
    return {
        "run_id": run_id,
        "contacts": len(contacts),
        "anti_icp": len(disqualified),
        "suppressed": len(skipped),
    }


def resume(deps: FlowDeps, event: CampaignResume, event_id: str) -> dict[str, Any]:
    """Re-activate a paused campaign: unblock its outbox and resume its paused runs (or the
    one named), re-dispatching each resumed run's unfinished contacts.

    Idempotent: only runs this call moved from paused to running are re-dispatched, so a
    duplicate or late resume does nothing.
    """
    org = event.org_id
    with deps.db.transaction(org) as cur:
        campaign = campaigns.get(cur, event.campaign_id)
        if campaign is None:
            raise NotFound(f"campaign {event.campaign_id!r} does not exist in this org")
        runs = campaigns.resume(cur, event.campaign_id, event.run_id)
        unblocked = outbox.queued_in_campaign(cur, event.campaign_id)
        contacts = campaigns.contacts(cur, event.campaign_id)
        finished = {
            (r["run_id"], r["step_key"][len("done:") :]) for r in campaigns.done_steps(cur, runs)
        }
    for outbox_id in unblocked:  # blocked while paused: handed to the send step now
        resume_id = hashlib.sha256(event_id.encode()).hexdigest()[:16]
        schedule_send(deps, org, outbox_id, attempt=f"resume-{resume_id}")
    redispatched = 0
    for run_id in runs:
        for contact in contacts:
            if (run_id, contact["id"]) not in finished:
                handoff(deps, org, campaign, run_id, contact["id"], "AGT-003")
                redispatched += 1
    return {"campaign_id": event.campaign_id, "resumed_runs": runs, "redispatched": redispatched}


def contact_done(
    deps: FlowDeps,
    org: str,
    run_id: str,
    contact_id: str,
    outcome: str,
    *,
    reason: str | None = None,
) -> None:
    """Count a contact's chain as finished, once, with its ``outcome`` (and, for one given
    up on, the ``reason``); completes the run with its last contact."""
    done = {"outcome": outcome, **({"reason": reason} if reason else {})}
    step(
        deps.db,
        org,
        run_id,
        done_key(contact_id),
        lambda: done,
        lambda cur, _: campaigns.contact_done(cur, run_id),
    )


def handoff(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, agent_id: str
) -> None:
    """Publish one contact of a run to the next agent in the chain."""
    event = handoff_event(org, campaign, run_id, contact_id, agent_id)
    publish(deps.transport, AGENT_TOPICS[agent_id], event)


def handoff_event(org: str, campaign: Row, run_id: str, contact_id: str, agent_id: str) -> Handoff:
    """The event that hands one contact of a run to ``agent_id``."""
    envelope = HandoffEnvelope(
        parent_run_id=run_id,
        downstream_agent=AGENTS[agent_id].slug,
        entity_ids=[contact_id],
        angle=campaign["angle"],
        tier=campaign["tier"],
        kc_bucket_hints=HINTS[agent_id],  # type: ignore[arg-type]  # registry ids
    )
    return Handoff(org_id=org, campaign_id=campaign["id"], envelope=envelope)


def as_prospect(contact: Mapping[str, Any]) -> dict[str, Any]:
    """The contact as the rules and offline provider read it (contacts.json shape)."""
    return {k: v for k, v in contact.items() if k not in ("icp_score", "icp_disqualifiers")}
