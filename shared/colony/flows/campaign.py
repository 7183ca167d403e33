"""Flow 2, the campaign run (SPEC §6.2; seed §4.3, §4.4, §7.1).

    campaign.start ─► anti-ICP filter (rules, no LLM) ─► handoff ─► AGT-003 enrich
        ─► AGT-004 qualify ─► qualified? ─► AGT-005 message ─► approval queue
                                └─ no ──► contact done

Every LLM call is a durable step keyed by (run, step); every contact ends in one ``done:``
step that counts it, and the run completes when all are counted. Handlers are idempotent on
their event id and re-publish freely: downstream steps absorb duplicates. A paused run does
no new work; resuming re-dispatches each unfinished contact, whose finished steps replay
from their stored outputs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from colony.contracts import HandoffEnvelope
from colony.contracts.events import CampaignResume, CampaignStart, Handoff
from colony.errors import CallerError, NotFound, OutputInvalid, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.knowledge.exemplars import hinted_domains, to_exemplars
from colony.llm.agent_call import call_agent
from colony.policy.anti_icp import match_rules
from colony.policy.outbound import check_outbound
from colony.registry.agents import AGENTS, agent_by_slug
from colony.registry.functions import AGENT_TOPICS, CAMPAIGN_TOPIC
from colony.runtime import idempotency
from colony.runtime.steps import step
from colony.runtime.transport import publish
from colony.store import campaigns as sql
from colony.store import fetch_all, fetch_one, orgdata
from colony.store.db import Row

# Bucket hints per downstream agent (seed §7.2): what each specialist should retrieve.
HINTS: dict[str, list[str]] = {
    "AGT-003": ["KC-03"],
    "AGT-004": ["KC-02"],
    "AGT-005": ["KC-08", "KC-04", "KC-07"],
}
EXEMPLARS_PER_DOMAIN = 2
DEFAULT_COMPETITORS = ("CareSpace Analytics", "FacilityIQ", "LeaseLogic Health")


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
        row = fetch_one(
            cur,
            sql.CREATE_CAMPAIGN,
            (org_id, name, angle, tier, bounce_threshold, complaint_threshold),
        )
        assert row is not None
        for contact_id in contact_ids:
            cur.execute(sql.ADD_CONTACT, (org_id, row["id"], contact_id))
    return str(row["id"])


def launch(deps: FlowDeps, org_id: str, campaign_id: str) -> str:
    """Publish a start event for a new run of ``campaign_id``; return the run id."""
    run_id = f"run-{uuid.uuid4().hex[:16]}"
    event = CampaignStart(org_id=org_id, campaign_id=campaign_id, run_id=run_id)
    publish(deps.transport, CAMPAIGN_TOPIC, event)
    return run_id


# ─── AGT-002: start, resume, contact done ──────────────────────────────────────────────


def start(deps: FlowDeps, event: CampaignStart, event_id: str) -> dict[str, Any]:
    org, run_id = event.org_id, event.run_id
    if idempotency.seen(deps.db, org, "campaign.start", event_id):
        return {"duplicate": True}
    with deps.db.transaction(org) as cur:
        campaign = fetch_one(cur, sql.CAMPAIGN, (event.campaign_id,))
        if campaign is None:
            raise NotFound(f"campaign {event.campaign_id!r} does not exist in this org")
        contacts = fetch_all(cur, sql.CAMPAIGN_CONTACTS, (event.campaign_id,))
        icp = orgdata.active_icp(cur)
        # A run launched while the campaign is paused waits for its resume (CONST-005).
        status = "paused" if campaign["status"] == "paused" else "running"
        cur.execute(sql.START_RUN, (run_id, org, event.campaign_id, status, len(contacts)))

    rules = (icp or {}).get("anti_icp_rules") or []

    def anti_icp() -> dict[str, Any]:
        # CONST-002: deterministic rules, zero LLM tokens for disqualified contacts.
        return {
            "disqualified": {
                c["id"]: [m.rule_id for m in matches]
                for c in contacts
                if (matches := match_rules(_as_prospect(c), rules))
            }
        }

    def record_scores(cur: Any, output: Mapping[str, Any]) -> None:
        for contact_id, rule_ids in output["disqualified"].items():
            cur.execute(sql.SET_SCORE, (0, json.dumps(rule_ids), "disqualify", contact_id))

    filtered = step(deps.db, org, run_id, "anti_icp", anti_icp, record_scores)
    disqualified = filtered["disqualified"]
    for contact in contacts:
        if contact["id"] in disqualified:
            contact_done(deps, org, run_id, contact["id"], "anti_icp")
        else:
            _handoff(deps, org, campaign, run_id, contact["id"], "AGT-003")
    with deps.db.transaction(org) as cur:
        cur.execute(sql.COMPLETE_IF_DONE, (run_id,))  # e.g. every contact was anti-ICP
    idempotency.mark(deps.db, org, "campaign.start", event_id)
    return {"run_id": run_id, "contacts": len(contacts), "anti_icp": len(disqualified)}


def resume(deps: FlowDeps, event: CampaignResume, event_id: str) -> dict[str, Any]:
    """Re-activate a paused campaign: unblock its outbox and resume its paused runs (or the
    one named), re-dispatching each resumed run's unfinished contacts.

    Idempotent: only runs this call moved from paused to running are re-dispatched, so a
    duplicate or late resume does nothing.
    """
    org = event.org_id
    with deps.db.transaction(org) as cur:
        campaign = fetch_one(cur, sql.CAMPAIGN, (event.campaign_id,))
        if campaign is None:
            raise NotFound(f"campaign {event.campaign_id!r} does not exist in this org")
        cur.execute(sql.ACTIVATE_CAMPAIGN, (event.campaign_id,))
        cur.execute(sql.UNBLOCK_OUTBOX, (event.campaign_id,))
        resumable = fetch_all(cur, sql.RESUME_RUNS, (event.campaign_id, event.run_id, event.run_id))
        runs = [r["id"] for r in resumable]
        contacts = fetch_all(cur, sql.CAMPAIGN_CONTACTS, (event.campaign_id,))
        finished = {
            (r["run_id"], r["step_key"][len("done:") :])
            for r in fetch_all(
                cur,
                "SELECT run_id, step_key FROM run_steps WHERE run_id = ANY(%s)"
                " AND status = 'done' AND step_key LIKE 'done:%%'",
                (runs,),
            )
        }
    redispatched = 0
    for run_id in runs:
        for contact in contacts:
            if (run_id, contact["id"]) not in finished:
                _handoff(deps, org, campaign, run_id, contact["id"], "AGT-003")
                redispatched += 1
    return {"campaign_id": event.campaign_id, "resumed_runs": runs, "redispatched": redispatched}


def contact_done(deps: FlowDeps, org: str, run_id: str, contact_id: str, outcome: str) -> None:
    """Count a contact's chain as finished, once; completes the run with its last contact."""
    step(
        deps.db,
        org,
        run_id,
        f"done:{contact_id}",
        lambda: {"outcome": outcome},
        lambda cur, _: cur.execute(sql.CONTACT_DONE, (run_id,)),
    )


# ─── the specialists: AGT-003, AGT-004, AGT-005 ────────────────────────────────────────


def enrich(deps: FlowDeps, event: Handoff, event_id: str) -> dict[str, Any]:
    return _specialist(deps, event, event_id, "AGT-003", _enrich)


def qualify(deps: FlowDeps, event: Handoff, event_id: str) -> dict[str, Any]:
    return _specialist(deps, event, event_id, "AGT-004", _qualify)


def write_message(deps: FlowDeps, event: Handoff, event_id: str) -> dict[str, Any]:
    return _specialist(deps, event, event_id, "AGT-005", _message)


def _specialist(
    deps: FlowDeps, event: Handoff, event_id: str, agent_id: str, work: Any
) -> dict[str, Any]:
    org, envelope = event.org_id, event.envelope
    if agent_by_slug(envelope.downstream_agent).id != agent_id:
        raise ValidationFailed(f"{agent_id} received a handoff for {envelope.downstream_agent!r}")
    handler = AGENTS[agent_id].slug
    if idempotency.seen(deps.db, org, handler, event_id):
        return {"duplicate": True}
    run_id = envelope.parent_run_id
    with deps.db.transaction(org) as cur:
        run = fetch_one(cur, sql.RUN, (run_id,))
        campaign = fetch_one(cur, sql.CAMPAIGN, (event.campaign_id,))
    if run is None or campaign is None:
        raise NotFound(f"run {run_id!r} or its campaign does not exist in this org")
    if run["status"] != "running":
        # Paused (CONST-005) or finished: no new work. Resume re-dispatches what is left.
        idempotency.mark(deps.db, org, handler, event_id, detail=f"skipped: run {run['status']}")
        return {"skipped": run["status"]}
    results = []
    for contact_id in envelope.entity_ids:
        try:
            results.append(work(deps, org, campaign, run_id, contact_id, envelope))
        except (CallerError, OutputInvalid) as error:
            # Permanent for this contact: count it as finished so the run can complete.
            # A caller error is still raised, so the delivery is recorded as rejected. An
            # InternalError (a missing key, a broken template) is not caught: like an upstream
            # failure it is retried, and the contact stays pending until a fix lets it pass.
            contact_done(deps, org, run_id, contact_id, f"failed:{error.code}")
            if isinstance(error, CallerError):
                raise
            results.append(f"failed:{error.code}")
        deps.faults.check(f"{handler}.after_step", event_id)
    idempotency.mark(deps.db, org, handler, event_id)
    return {"results": results}


def _enrich(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, envelope: HandoffEnvelope
) -> str:
    contact = _contact(deps, org, contact_id)

    def compute() -> dict[str, Any]:
        request = _request(deps, org, run_id, "AGT-003", envelope, {"contact": contact}, {})
        result = call_agent(deps.llm, request, provider_context={"contact": _as_prospect(contact)})
        assert result.output is not None
        return result.output.model_dump(mode="json")

    def apply(cur: Any, output: Mapping[str, Any]) -> None:
        extra = {"summary": output["summary"], "persona": output.get("persona")}
        cur.execute(sql.SET_ENRICHMENT, (json.dumps(extra), contact_id))

    step(deps.db, org, run_id, f"enrich:{contact_id}", compute, apply)
    _handoff(deps, org, campaign, run_id, contact_id, "AGT-004")
    return "enriched"


def _qualify(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, envelope: HandoffEnvelope
) -> str:
    contact = _contact(deps, org, contact_id)
    with deps.db.transaction(org) as cur:
        icp = orgdata.active_icp(cur)
    if icp is None:
        contact_done(deps, org, run_id, contact_id, "missing_data")
        return "missing_data"

    def compute() -> dict[str, Any]:
        today = deps.clock().date().isoformat()
        request = _request(
            deps,
            org,
            run_id,
            "AGT-004",
            envelope,
            {"contact": contact, "icp_rubric": icp["rubric"]},
            {"today": today},
        )
        context = {"contact": _as_prospect(contact), "icp": icp, "today": today}
        result = call_agent(deps.llm, request, provider_context=context)
        assert result.output is not None
        return result.output.model_dump(mode="json")

    def apply(cur: Any, output: Mapping[str, Any]) -> None:
        cur.execute(
            sql.SET_SCORE,
            (
                output["total_score"],
                json.dumps(output["disqualifiers"]),
                output["recommendation"],
                contact_id,
            ),
        )

    score = step(deps.db, org, run_id, f"qualify:{contact_id}", compute, apply)
    if score["recommendation"] != "qualify":
        contact_done(deps, org, run_id, contact_id, "not_qualified")
        return "not_qualified"
    _handoff(deps, org, campaign, run_id, contact_id, "AGT-005")
    return "qualified"


def _message(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, envelope: HandoffEnvelope
) -> str:
    contact = _contact(deps, org, contact_id)
    signals = [s.get("detail", "") for s in contact.get("signals") or [] if s.get("detail")]
    missing = [f for f, ok in (("name", contact.get("name")), ("signals", signals)) if not ok]
    if missing:  # CONST-004: never guess; the contact ends with missing data
        contact_done(deps, org, run_id, contact_id, "missing_data")
        return "missing_data"
    competitors = deps.knowledge.tag_values(org, "KC-06", "competitors") or list(
        DEFAULT_COMPETITORS
    )
    tier = envelope.tier

    def compute() -> dict[str, Any]:
        request = _request(
            deps,
            org,
            run_id,
            "AGT-005",
            envelope,
            {"contact": contact},
            {"angle": envelope.angle, "tier": tier, "step": 1},
        )
        context = {
            "contact": _as_prospect(contact),
            "angle": envelope.angle,
            "tier": tier,
            "step": 1,
            "exemplars": [e.model_dump(mode="json") for e in request.exemplars],
            "competitors": competitors,
        }

        def problems(m: Any) -> list[str]:
            return check_outbound(m, tier=tier, contact_signals=signals, competitors=competitors)

        result = call_agent(deps.llm, request, provider_context=context, check=problems)
        assert result.output is not None
        return result.output.model_dump(mode="json")

    def apply(cur: Any, output: Mapping[str, Any]) -> None:
        payload = {
            **output,
            "contact_id": contact_id,
            "campaign_id": campaign["id"],
            "tier": tier,
            "to": contact.get("email"),
        }
        cur.execute(
            sql.ADD_APPROVAL,
            (org, "outbound_message", "AGT-005", run_id, contact_id, json.dumps(payload)),
        )

    step(deps.db, org, run_id, f"message:{contact_id}", compute, apply)
    contact_done(deps, org, run_id, contact_id, "message_queued")
    return "message_queued"


# ─── helpers ───────────────────────────────────────────────────────────────────────────


def _contact(deps: FlowDeps, org: str, contact_id: str) -> Row:
    with deps.db.transaction(org) as cur:
        contact = fetch_one(cur, sql.CONTACT, (contact_id,))
    if contact is None:
        raise NotFound(f"contact {contact_id!r} does not exist in this org")
    return contact


def _as_prospect(contact: Mapping[str, Any]) -> dict[str, Any]:
    """The contact as the rules and offline provider read it (contacts.json shape)."""
    return {k: v for k, v in contact.items() if k not in ("icp_score", "icp_disqualifiers")}


def _request(
    deps: FlowDeps,
    org: str,
    run_id: str,
    agent_id: str,
    envelope: HandoffEnvelope,
    entities: Mapping[str, Any],
    task: Mapping[str, Any],
) -> Any:
    from colony.context.assembler import AssemblyRequest
    from colony.contracts import IcpDefinition, OrgContext

    with deps.db.transaction(org) as cur:
        icp = orgdata.active_icp(cur)
        name = orgdata.org_name(cur)
    domains = hinted_domains(AGENTS[agent_id].kc_domains, envelope.kc_bucket_hints)
    query = " ".join(str(v) for v in (entities.get("contact") or {}).values() if isinstance(v, str))
    hits = deps.knowledge.retrieve(org, query or agent_id, domains, EXEMPLARS_PER_DOMAIN)
    org_context = OrgContext(org_name=name, icp=IcpDefinition(**icp) if icp else None)
    return AssemblyRequest(
        agent_id, org, run_id, org_context, to_exemplars(hits), dict(entities), (), dict(task)
    )


def _handoff(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, agent_id: str
) -> None:
    envelope = HandoffEnvelope(
        parent_run_id=run_id,
        downstream_agent=AGENTS[agent_id].slug,
        entity_ids=[contact_id],
        angle=campaign["angle"],
        tier=campaign["tier"],
        kc_bucket_hints=HINTS[agent_id],  # type: ignore[arg-type]  # registry ids
    )
    event = Handoff(org_id=org, campaign_id=campaign["id"], envelope=envelope)
    publish(deps.transport, AGENT_TOPICS[agent_id], event)
