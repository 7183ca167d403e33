"""AGT-001's tool choice, AGT-008's pieces and AGT-009's kits, driven as their flows drive
them.

- AGT-001 (``flows.chat.hydration.model_step``): the message checked as a turn checks it
  (``flows.chat.check_message``: a blank one is refused), the brief, the pending approvals
  and the recent replies as entities (or the flow's words for none), the earlier turns as
  history, the seven tools offered (``flows.chat.tools.definitions``), streamed. The outcome
  is the tool calls the model made, or its reply.
- AGT-008 (``flows.content.write_piece``): format, topic and competitors as the task, no
  competitor named (the flow's check, one repair).
- AGT-009 (``flows.pipeline.onboarding``): the deal's facts as the entity, the playbooks as
  the grounding.
"""

from __future__ import annotations

from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.errors import ValidationFailed
from colony.evals.cases import Case
from colony.evals.drive.base import Env, Outcome, call, exemplars, llm_only, org_context
from colony.flows.chat import check_message, tools
from colony.flows.content import GROUNDING
from colony.policy.outbound import competitor_mentions
from colony.ports import Message

NO_BRIEF = "(no daily brief has been written today)"  # flows.chat.hydration's words for none
NO_QUEUE = "(the approval queue is empty)"
NO_REPLIES = "(no replies in the last 7 days)"


def orchestrate(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    inputs = case.inputs
    try:
        message = check_message(llm_only(env), str(inputs["message"]))
    except ValidationFailed as refused:
        outcome.status, outcome.error = "rejected", refused.code
        return outcome
    entities = {
        "daily_brief": inputs.get("daily_brief") or NO_BRIEF,
        "pending_approvals": list(inputs.get("pending_approvals") or []) or NO_QUEUE,
        "recent_replies": list(inputs.get("recent_replies") or []) or NO_REPLIES,
    }
    history = [Message(h["role"], h["content"]) for h in inputs.get("history") or []]
    built = AssemblyRequest(
        "AGT-001",
        "org_eval",
        env.run_id,
        org_context(case),
        exemplars(case),
        entities,
        history,
        {"message": message},
        tools.definitions(),
        kc_queried=tools.ALL_DOMAINS,
    )
    result = call(env, outcome, built, stream=True)
    if result is None:
        return outcome
    if result.tool_calls:
        outcome.status = "tool"
        outcome.tool_calls = [
            {"name": c.name, "arguments": dict(c.arguments)} for c in result.tool_calls
        ]
    elif result.output is not None:
        outcome.output = result.output.model_dump(mode="json")
    return outcome


def piece(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    inputs = case.inputs
    competitors = list(inputs.get("competitors") or [])
    task = {"format": inputs["format"], "topic": inputs["topic"], "competitors": competitors}
    built = AssemblyRequest(
        "AGT-008",
        "org_eval",
        env.run_id,
        org_context(case),
        exemplars(case),
        {},
        (),
        task,
        kc_queried=GROUNDING,
    )

    def no_competitor(p: Any) -> list[str]:
        named = competitor_mentions(f"{p.title}\n{p.body}", competitors)
        return [f"the piece names a competitor: {', '.join(named)}"] if named else []

    result = call(env, outcome, built, check=no_competitor)
    if result is not None and result.output is not None:
        outcome.output = result.output.model_dump(mode="json")
    return outcome


def kit(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    built = AssemblyRequest(
        "AGT-009",
        "org_eval",
        env.run_id,
        org_context(case),
        exemplars(case),
        {"deal": dict(case.inputs["deal"])},
        (),
        {},
        kc_queried=("KC-10",),
    )
    result = call(env, outcome, built)
    if result is not None and result.output is not None:
        outcome.output = result.output.model_dump(mode="json")
    return outcome
