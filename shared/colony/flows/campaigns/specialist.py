"""What the campaign's specialists (AGT-003, AGT-004, AGT-005) share: taking a handoff,
loading its contact and building the agent's assembly request.

Each specialist's own step lives in its module (``enrichment``, ``qualification``,
``message_generator``), so a function's bundle carries only its own agent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.contracts import (
    Exemplar,
    HandoffEnvelope,
    IcpDefinition,
    OrgContext,
    SequenceStep,
)
from colony.contracts.events import Handoff
from colony.errors import (
    CallerError,
    DataMissing,
    HandoffRefused,
    ModelRefused,
    NotFound,
    OutputInvalid,
    UpstreamError,
    ValidationFailed,
)
from colony.flows.campaigns.campaign import contact_done, done_key, previous_step_key, step_key
from colony.flows.deps import FlowDeps
from colony.flows.tenants import budget
from colony.knowledge.exemplars import hinted_domains, picked_exemplars, to_exemplars
from colony.registry.agents import AGENTS, agent_by_slug
from colony.registry.functions import AGENT_TOPICS
from colony.runtime import delivery, idempotency
from colony.runtime.steps import step
from colony.store import orgdata
from colony.store.approvals import approvals
from colony.store.campaigns import campaigns, signals
from colony.store.db import Row

EXEMPLARS_PER_DOMAIN = 2
OUTBOUND = "KC-08"  # approved messages, chosen by angle and outcome

logger = logging.getLogger("colony.flows")

# One contact's work: (deps, org, campaign, run_id, contact_id, envelope) → its outcome.
Work = Callable[[FlowDeps, str, Row, str, str, HandoffEnvelope], str]


def handle_handoff(
    deps: FlowDeps, event: Any, event_id: str, agent_id: str, work: Work
) -> dict[str, Any]:
    """Run ``work`` for each contact of a handoff to ``agent_id``, once per event.

    Only the next link of a chain AGT-002 started is accepted: the run must be one of the
    event's campaign and each contact one of that campaign whose step before ``agent_id``'s
    is done in the run (and whose chain is not already counted). Anything else is
    ``HandoffRefused`` before any step is claimed or model called, and the run's count is
    untouched: a forged handoff cannot finish a run or draft for a stranger.

    A contact whose step has not started waits while the org's budget is spent and capped:
    its handoff is held (``flows.tenants.budget``) and published again when the budget
    allows; one whose step is running or done goes on.
    """
    if not isinstance(event, Handoff):
        raise ValidationFailed(f"expected a handoff, got {type(event).__name__}")
    org, envelope = event.org_id, event.envelope
    if agent_by_slug(envelope.downstream_agent).id != agent_id:
        raise ValidationFailed(f"{agent_id} received a handoff for {envelope.downstream_agent!r}")
    handler = AGENTS[agent_id].slug
    if idempotency.seen(deps.db, org, handler, event_id):
        return {"duplicate": True}
    run_id = envelope.parent_run_id
    with deps.db.transaction(org) as cur:
        run = campaigns.run(cur, run_id)
        campaign = campaigns.get(cur, event.campaign_id)
    if run is None or campaign is None:
        raise NotFound(f"run {run_id!r} or its campaign does not exist in this org")
    if run["campaign_id"] != campaign["id"]:
        raise HandoffRefused(f"run {run_id!r} is not a run of campaign {campaign['id']!r}")
    fresh = _check_chain(deps, org, campaign["id"], run_id, agent_id, envelope.entity_ids)
    if run["status"] != "running":
        # Paused (CONST-005) or finished: no new work. Resume re-dispatches what is left.
        idempotency.mark(deps.db, org, handler, event_id, detail=f"skipped: run {run['status']}")
        return {"skipped": run["status"]}
    held = _held(deps, event, agent_id, fresh)
    results = []
    for contact_id in envelope.entity_ids:
        if contact_id in held:
            results.append("held:budget")
            continue
        try:
            results.append(work(deps, org, campaign, run_id, contact_id, envelope))
        except (CallerError, OutputInvalid) as error:
            # Permanent for this contact: count it as finished so the run can complete.
            # A caller error is still raised, so the delivery is recorded as rejected. An
            # InternalError (a missing key, a broken template) is not caught: like an upstream
            # failure it is retried, and the contact stays pending until a fix lets it pass;
            # an upstream failure is given up on at the last attempt (``gave_up``).
            outcome = f"failed:{error.code}"
            if isinstance(error, ModelRefused):  # the provider's category, for the person
                outcome += f":{error.reason}"
            if isinstance(error, DataMissing):  # CONST-004: what the model said it lacked
                outcome = missing_data_done(
                    deps, org, campaign, run_id, contact_id, agent_id, error.fields
                )
            else:
                contact_done(deps, org, run_id, contact_id, outcome)
            if isinstance(error, CallerError):
                raise
            results.append(outcome)
        except Exception as error:
            gave_up(deps, org, run_id, contact_id, error)
            raise
        deps.faults.check(f"{handler}.after_step", event_id)
    idempotency.mark(deps.db, org, handler, event_id, detail="held: budget" if held else None)
    return {"results": results, **({"held": held[next(iter(held))]} if held else {})}


def _held(deps: FlowDeps, event: Handoff, agent_id: str, fresh: Sequence[str]) -> dict[str, str]:
    """Hold each of ``fresh`` (contacts whose ``agent_id`` step has not started) while the
    org's budget holds campaign work back: contact → why it waits. Each is held as a handoff
    of its own, so it is released, and runs, on its own."""
    waiting: dict[str, str] = {}
    if not fresh:
        return waiting
    org, envelope = event.org_id, event.envelope
    with deps.db.transaction(org) as cur:
        for contact_id in fresh:
            alone = envelope.model_copy(update={"entity_ids": [contact_id]})
            reason = budget.hold_if_capped(
                cur,
                org,
                run_id=envelope.parent_run_id,
                step_key=step_key(agent_id, contact_id),
                campaign_id=event.campaign_id,
                topic=AGENT_TOPICS[agent_id],
                event=event.model_copy(update={"envelope": alone}).model_dump(mode="json"),
            )
            if reason is None:
                break  # the budget allows it: it allows the others too
            waiting[contact_id] = reason
    return waiting


def gave_up(deps: FlowDeps, org: str, run_id: str, contact_id: str, error: Exception) -> None:
    """When an upstream failure (a provider down or refusing the call) ends the delivery's
    last attempt (``runtime.delivery``), count the contact's chain as finished with
    ``failed:<code>`` and why (the step's ``reason``: the attempts, the error's type and code,
    the provider's own reason): the message is dead-lettered next and nothing of ours runs for
    it again, so a contact left pending would keep its run from ever completing.

    Before the last attempt, nothing: the delivery is retried. A failure of ours (an
    ``InternalError`` such as a missing key, or a bug) is not given up on either: the contact
    stays pending, and once it is fixed, the dead letter replayed goes through (a contact
    given up on is finished: a replay of its message is refused)."""
    reason = delivery.final_reason(error)
    if reason is None or not isinstance(error, UpstreamError):
        return
    try:
        contact_done(deps, org, run_id, contact_id, f"failed:{error.code}", reason=reason)
    except Exception as failed:  # the original error matters more; it still propagates
        logger.error("counting a contact given up failed: %s", type(failed).__name__)


def missing_data_done(
    deps: FlowDeps,
    org: str,
    campaign: Row,
    run_id: str,
    contact_id: str,
    agent_id: str,
    fields: Sequence[str],
) -> str:
    """CONST-004, made visible: count the contact's chain as finished with the outcome
    ``missing_data:<fields>`` and, in the same step (so once, however often the handoff is
    delivered), put a ``missing_data`` item on the approval queue naming the contact and the
    fields, which a person can only dismiss. Returns the outcome."""
    missing = [str(f) for f in fields][:20]
    outcome = "missing_data:" + ",".join(missing)[:300]
    contact = load_contact(deps, org, contact_id)
    who = str(contact.get("name") or contact.get("external_id") or contact_id)
    agent = AGENTS[agent_id]
    payload = {
        "title": f"{agent.name} ({agent_id}) lacks {', '.join(missing)} for {who}"[:300],
        "contact_id": contact_id,
        "campaign_id": campaign["id"],
        "agent_id": agent_id,
        "missing_data": missing,
    }

    def apply(cur: Any, _: Any) -> None:
        campaigns.contact_done(cur, run_id)
        approvals.add(
            cur, org, "missing_data", agent_id, payload, subject_id=contact_id, run_id=run_id
        )

    step(deps.db, org, run_id, done_key(contact_id), lambda: {"outcome": outcome}, apply)
    return outcome


def _check_chain(
    deps: FlowDeps, org: str, campaign_id: str, run_id: str, agent_id: str, contacts: list[str]
) -> list[str]:
    """Refuse a handoff that is not the next link of the run's chain; the contacts whose
    ``agent_id`` step has not started yet."""
    fresh: list[str] = []
    with deps.db.transaction(org) as cur:
        for contact_id in contacts:
            shown = repr(contact_id[:64])
            standing = campaigns.handoff_standing(
                cur,
                campaign_id,
                run_id,
                contact_id,
                previous_key=previous_step_key(agent_id, contact_id),
                own_key=step_key(agent_id, contact_id),
                done_key=done_key(contact_id),
            )
            if not standing["member"]:
                raise HandoffRefused(f"contact {shown} is not in campaign {campaign_id!r}")
            if standing["previous"] != "done":
                raise HandoffRefused(
                    f"contact {shown} has not finished the step before {agent_id} in this run"
                )
            if standing["finished"] == "done" and standing["own"] != "done":
                raise HandoffRefused(f"contact {shown} has already finished this run")
            if standing["own"] is None:
                fresh.append(contact_id)
    return fresh


def load_contact(deps: FlowDeps, org: str, contact_id: str) -> Row:
    with deps.db.transaction(org) as cur:
        contact = campaigns.contact(cur, contact_id)
    if contact is None:
        raise NotFound(f"contact {contact_id!r} does not exist in this org")
    return contact


def known_signals(deps: FlowDeps, org: str, contact: Row) -> tuple[Row, list[Row]]:
    """The contact as AGT-004/005's ``contact`` entity, and its signals apart
    (``store.campaigns.signals.known_for``): the assembler ranks and cuts those within the budget,
    so the entity does not carry its own copy of them."""
    with deps.db.transaction(org) as cur:
        known = signals.known_for(cur, contact)
    return {k: v for k, v in contact.items() if k != "signals"}, known


def assembly_request(
    deps: FlowDeps,
    org: str,
    run_id: str,
    agent_id: str,
    envelope: HandoffEnvelope,
    entities: Mapping[str, Any],
    task: Mapping[str, Any],
    *,
    signals: Sequence[Mapping[str, Any]] = (),
    sources: Sequence[Mapping[str, Any]] = (),
    sequence: Sequence[Mapping[str, Any]] = (),
    thread: Sequence[Mapping[str, Any]] = (),
) -> Any:
    """``agent_id``'s request: its grounding, the org's ICP, ``entities`` and ``task``, the
    contact's ``signals`` (``known_signals``), its company's stored ``sources``
    (``flows.research.passages_for``) and the ``thread`` of its sequence (what it already
    got) as the assembler's own lists. The org context carries the ``sequence`` the call
    works in (the library's steps) and the stage of the contact's deal, when it has one."""
    contact_id = (entities.get("contact") or {}).get("id")
    with deps.db.transaction(org) as cur:
        icp = orgdata.active_icp(cur)
        name = orgdata.org_name(cur)
        stage = orgdata.deal_stage(cur, str(contact_id)) if contact_id else None
    domains = hinted_domains(AGENTS[agent_id].kc_domains, envelope.kc_bucket_hints)
    query = " ".join(str(v) for v in (entities.get("contact") or {}).values() if isinstance(v, str))
    exemplars = grounding(deps, org, query or agent_id, domains, envelope)
    org_context = OrgContext(
        org_name=name,
        icp=IcpDefinition(**icp) if icp else None,
        sequence_library=[SequenceStep(**s) for s in sequence],
        deal_stage=stage,
    )
    return AssemblyRequest(
        agent_id,
        org,
        run_id,
        org_context,
        exemplars,
        dict(entities),
        (),
        dict(task),
        kc_queried=domains,
        signals=tuple(signals),
        sources=tuple(sources),
        thread=tuple(thread),
    )


def grounding(
    deps: FlowDeps, org: str, query: str, domains: Sequence[str], envelope: HandoffEnvelope
) -> list[Exemplar]:
    """The exemplars a specialist writes from, best first.

    A handoff with an angle that reads KC-08 (AGT-005) gets the three approved messages of
    that angle proven best by their outcomes (``colony.knowledge.outcomes``) ahead of the
    other domains' hits (one transaction); a pick from another angle is marked
    ``selected_by=fallback`` on the exemplar (the approval card shows it) and logged. The
    query is embedded once.
    """
    if OUTBOUND not in domains or not envelope.angle:
        return to_exemplars(deps.knowledge.retrieve(org, query, domains, EXEMPLARS_PER_DOMAIN))
    vector = deps.knowledge.embed_query(query)
    others = [d for d in domains if d != OUTBOUND]
    picked, hits = deps.knowledge.exemplars(
        org,
        vector,
        angle=envelope.angle,
        tier=envelope.tier,
        domains=others,
        k_per_domain=EXEMPLARS_PER_DOMAIN,
    )
    fallback = sum(p.selected_by == "fallback" for p in picked)
    if fallback or not picked:
        # ids and counts only: the angle is the campaign's own setting, never prompt text
        logger.info(
            "exemplar fallback",
            extra={"org_id": org, "in_angle": len(picked) - fallback, "fallback": fallback},
        )
    return picked_exemplars(picked) + to_exemplars(hits)
