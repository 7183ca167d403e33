"""Each agent's case driven the way its flow drives the agent (the same request fields,
templates, budgets and checks, through ``colony.llm.agent_call.call_agent``), one module per
capability: ``campaign`` (AGT-003/004/005), ``recording`` (AGT-006/007), ``other``
(AGT-001/008/009), ``brief`` (AGT-010). What the flows read from the database and the
Knowledge Core comes from the case's inputs instead (its documents are what retrieval
returned); what they do with an answer (grounding, the tier, deal changes) is done here by
the flows' own functions.
"""

from __future__ import annotations

from collections.abc import Callable

from colony.errors import ColonyError
from colony.evals.cases import Case
from colony.evals.drive import brief, campaign, other, recording
from colony.evals.drive.base import CallStat, Env, Outcome

__all__ = ["DRIVERS", "CallStat", "Env", "Outcome", "drive"]

DRIVERS: dict[str, Callable[[Case, Env], Outcome]] = {
    "AGT-001": other.orchestrate,
    "AGT-003": campaign.enrich,
    "AGT-004": campaign.qualify,
    "AGT-005": campaign.write,
    "AGT-006": recording.analyse,
    "AGT-007": recording.follow_up,
    "AGT-008": other.piece,
    "AGT-009": other.kit,
    "AGT-010": brief.write_brief,
}


def drive(case: Case, env: Env) -> Outcome:
    """Run ``case`` through its agent's path; an error of ours or the provider's is the
    outcome ``error`` (the report shows it), never raised past here."""
    try:
        return DRIVERS[case.agent](case, env)
    except ColonyError as error:
        return Outcome().fail(error)
