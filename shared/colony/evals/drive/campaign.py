"""The campaign's specialists, driven as their flows drive them (``flows.campaigns``).

- AGT-003: the ``contact`` entity, the company's ``sources`` passages, ``today`` and the ICP's
  vocabulary as the task; then the flow's grounding (``enrichment.grounded``: each quote word
  for word in its passage or the contact's own imported data, system fields never evidence)
  and ``one_per_event``. What the flow dropped is ``quotes_dropped``.
- AGT-004: the contact and its signals, the ICP rubric as an entity, ``today``; policy
  (``tiering.decide_tier``) turns the proposed score into the tier and outcome.
- AGT-005: the contact and its signals, angle, tier, step, the step's channel and guidance
  (email and none unless the case gives them), competitors, and the ``thread`` of earlier
  steps (a case's ``earlier_steps``, each an email unless it names its channel), checked by
  ``policy.outbound.check_outbound`` as the flow checks it (one repair).

Each request is an ``AssemblyRequest`` with the fields ``specialist.assembly_request`` gives
it: the agent's KC domains queried, the case's documents as what retrieval returned.
"""

from __future__ import annotations

from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.evals.cases import Case
from colony.evals.drive.base import Env, Outcome, call, contact_of, exemplars, org_context
from colony.flows.campaigns import enrichment
from colony.policy.outbound import check_outbound
from colony.policy.tiering import decide_tier
from colony.registry.agents import AGENTS
from colony.store.campaigns.signals import details, own

DEFAULT_KC = {
    "AGT-003": ("KC-03/vp-real-estate.md", "KC-03/cfo.md"),
    "AGT-004": ("KC-02/scoring-rubric.md", "KC-02/icp-definition.md"),
    "AGT-005": ("KC-07/outbound-style-rules.md",),
}


def request(
    case: Case,
    env: Env,
    entities: dict[str, Any],
    task: dict[str, Any],
    **sections: Any,
) -> AssemblyRequest:
    agent = case.agent
    return AssemblyRequest(
        agent,
        "org_eval",
        env.run_id,
        org_context(case),
        exemplars(case, DEFAULT_KC[agent]),
        entities,
        (),
        task,
        kc_queried=AGENTS[agent].kc_domains,
        **sections,
    )


def enrich(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    contact = contact_of(case)
    passages = list(case.inputs.get("sources") or [])
    icp = case.icp or {}
    task = {"today": case.inputs["today"], "icp_vocabulary": enrichment.vocabulary(icp)}
    built = request(case, env, {"contact": contact}, task, sources=tuple(passages))
    result = call(env, outcome, built)
    if result is None or result.output is None:
        return outcome
    answer = result.output.model_dump(mode="json")
    found, dropped = enrichment.grounded(answer.get("signals") or [], contact, passages)
    facts, facts_dropped = enrichment.grounded(answer.get("facts") or [], contact, passages)
    outcome.output = {**answer, "signals": enrichment.one_per_event(found), "facts": facts}
    outcome.facts["quotes_dropped"] = dropped + facts_dropped
    outcome.facts["proposed"] = answer  # before the flow's grounding, for the report
    return outcome


def qualify(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    icp = case.icp
    assert icp is not None, "an AGT-004 case needs an ICP (the flow ends without one)"
    contact = contact_of(case)
    listed = contact.pop("signals", None)  # the entity never carries them (``known_signals``)
    known = case.inputs.get("signals")  # none given: the contact's own (``signals.own``)
    signals = tuple(own(listed) if known is None else known)
    entities = {"contact": contact, "icp_rubric": icp["rubric"]}
    built = request(case, env, entities, {"today": case.inputs["today"]}, signals=signals)
    result = call(env, outcome, built)
    if result is None or result.output is None:
        return outcome
    proposed = result.output.model_dump(mode="json")
    decision = decide_tier(proposed["total_score"], icp.get("tiers"), proposed["disqualifiers"])
    outcome.output = {
        **proposed,
        "proposed_recommendation": proposed.get("recommendation"),
        "recommendation": decision.recommendation,
        "tier": decision.tier,
        "tier_rule": decision.rule,
    }
    return outcome


def write(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    inputs = case.inputs
    signals = list(inputs.get("signals") or [])
    tier, competitors = str(inputs["tier"]), list(inputs.get("competitors") or [])
    task: dict[str, Any] = {
        "angle": inputs["angle"],
        "tier": tier,
        "step": int(inputs.get("step") or 1),
        "channel": str(inputs.get("channel") or "email"),
        "guidance": str(inputs.get("guidance") or "(none)"),
        "competitors": competitors,
    }
    thread = tuple(
        {"channel": "email", **step} for step in inputs.get("earlier_steps") or () if step
    )
    contact = {k: v for k, v in contact_of(case).items() if k != "signals"}
    built = request(case, env, {"contact": contact}, task, signals=tuple(signals), thread=thread)

    def problems(message: Any) -> list[str]:
        return check_outbound(
            message, tier=tier, contact_signals=details(signals), competitors=competitors
        )

    result = call(env, outcome, built, check=problems)
    if result is not None and result.output is not None:
        outcome.output = result.output.model_dump(mode="json")
    return outcome
