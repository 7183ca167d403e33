"""AGT-004 Qualification: the model proposes a score against the ICP rubric and its reasons;
policy (``colony.policy.tiering``) decides the tier and outcome from the org's own bands.
Qualified contacts go on to the message generator, the rest end their chain.

The decision is made inside the step and stored with the model's answer, so a replayed step
keeps the tier it was given even if the org changes its bands later."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.contracts import HandoffEnvelope
from colony.contracts.outputs.campaigns import QualificationScore
from colony.flows.campaigns.campaign import contact_done, handoff, step_key
from colony.flows.campaigns.specialist import (
    assembly_request,
    handle_handoff,
    known_signals,
    load_contact,
)
from colony.flows.deps import FlowDeps
from colony.llm.agent_call import call_agent
from colony.policy.tiering import decide_tier
from colony.runtime.steps import step
from colony.store import orgdata
from colony.store.campaigns import campaigns
from colony.store.db import Row


def qualify(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """The ``qualification`` function's Pub/Sub handler."""
    return handle_handoff(deps, event, event_id, "AGT-004", _qualify)


def _qualify(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, envelope: HandoffEnvelope
) -> str:
    contact, signals = known_signals(deps, org, load_contact(deps, org, contact_id))
    with deps.db.transaction(org) as cur:
        icp = orgdata.active_icp(cur)
    if icp is None:
        contact_done(deps, org, run_id, contact_id, "missing_data")
        return "missing_data"

    def compute() -> dict[str, Any]:
        today = deps.clock().date().isoformat()
        request = assembly_request(
            deps,
            org,
            run_id,
            "AGT-004",
            envelope,
            {"contact": contact, "icp_rubric": icp["rubric"]},
            {"today": today},
            signals=signals,
        )
        result = call_agent(deps.llm, request)
        assert isinstance(result.output, QualificationScore)
        proposed = result.output.model_dump(mode="json")
        decision = decide_tier(proposed["total_score"], icp["tiers"], proposed["disqualifiers"])
        return {
            **proposed,
            "proposed_recommendation": proposed["recommendation"],
            "recommendation": decision.recommendation,
            "tier": decision.tier,
            "tier_rule": decision.rule,
        }

    def apply(cur: Any, output: Mapping[str, Any]) -> None:
        campaigns.set_score(
            cur,
            contact_id,
            output["total_score"],
            output["disqualifiers"],
            output["recommendation"],
            output.get("tier"),
        )

    score = step(deps.db, org, run_id, step_key("AGT-004", contact_id), compute, apply)
    if score["recommendation"] != "qualify":
        contact_done(deps, org, run_id, contact_id, "not_qualified")
        return "not_qualified"
    handoff(deps, org, campaign, run_id, contact_id, "AGT-005")
    return "qualified"
