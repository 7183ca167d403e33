"""AGT-005 Message Generator: draft a contact's first outbound message, checked by the
outbound policy, and queue it for approval; the contact's chain ends here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.contracts import HandoffEnvelope
from colony.flows import flags, org_admin
from colony.flows.campaign import as_prospect, contact_done, step_key
from colony.flows.deps import FlowDeps
from colony.flows.specialist import assembly_request, handle_handoff, load_contact
from colony.llm.agent_call import call_agent
from colony.policy.outbound import check_outbound
from colony.runtime.steps import step
from colony.store import approvals
from colony.store.db import Row

DEFAULT_COMPETITORS = ("CareSpace Analytics", "FacilityIQ", "LeaseLogic Health")


def write_message(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """The ``message-generator`` function's Pub/Sub handler."""
    return handle_handoff(deps, event, event_id, "AGT-005", _message)


def _message(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, envelope: HandoffEnvelope
) -> str:
    contact = load_contact(deps, org, contact_id)
    signals = [s.get("detail", "") for s in contact.get("signals") or [] if s.get("detail")]
    missing = [f for f, ok in (("name", contact.get("name")), ("signals", signals)) if not ok]
    if missing:  # CONST-004: never guess; the contact ends with missing data
        contact_done(deps, org, run_id, contact_id, "missing_data")
        return "missing_data"
    competitors = org_admin.competitors(deps, org, DEFAULT_COMPETITORS)
    tier = envelope.tier

    def compute() -> dict[str, Any]:
        request = assembly_request(
            deps,
            org,
            run_id,
            "AGT-005",
            envelope,
            {"contact": contact},
            {"angle": envelope.angle, "tier": tier, "step": 1},
        )
        context = {
            "contact": as_prospect(contact),
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
        output = result.output.model_dump(mode="json")
        to = str(contact.get("email") or "")
        return flags.flagged(output, flags.of_draft(result, output, allowed=[to]))

    def apply(cur: Any, output: Mapping[str, Any]) -> None:
        payload = {
            **output,
            "contact_id": contact_id,
            "campaign_id": campaign["id"],
            "tier": tier,
            "to": contact.get("email"),
        }
        approvals.add(
            cur, org, "outbound_message", "AGT-005", payload, subject_id=contact_id, run_id=run_id
        )

    step(deps.db, org, run_id, step_key("AGT-005", contact_id), compute, apply)
    contact_done(deps, org, run_id, contact_id, "message_queued")
    return "message_queued"
