"""Hydration and the model call: one step of a turn, from stored state to AGT-001's reply.

Per model call: the history within AGT-001's budget (compacted first when over,
``colony.flows.chat.compaction``), today's daily brief and the pending approval items as
entity data, the latest replies to our messages (their own text: untrusted, so inside the
entity data block like everything there), the top-3 Knowledge Core chunks for the message
(retrieved once per turn) — all through the assembler, whose per-section token account goes
into the call's trace. Apart from the turn so what the model sees is read in one place, and
the turn only acts on its answer.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from colony.context import untrusted
from colony.context.assembler import AssemblyRequest
from colony.contracts import IcpDefinition, OrgContext, ToolDefinition
from colony.contracts.chat import OrchestratorReply
from colony.errors import OutputInvalid, ValidationFailed
from colony.flows import approval_queue
from colony.flows.chat import history, tools
from colony.flows.chat.compaction import awaited, compact_if_needed, pending
from colony.flows.chat.turn_io import AGENT, TurnIO
from colony.knowledge.exemplars import to_exemplars
from colony.llm.agent_call import call_agent
from colony.ports import ToolCall
from colony.store import approvals, orgdata, replies
from colony.store import chat as chat_store

KC_TOP = 3
APPROVALS_SHOWN = 10
BRIEF_CHARS = 2400  # ≤250 words; a longer brief is clipped, not allowed to crowd the entity
REPLIES_SHOWN = 5
REPLIES_SINCE = timedelta(days=7)
REPLY_CHARS = 300  # a reply's own text, clipped


class OrchestratorFailed(ValidationFailed):
    """The model's answer broke its contract even after a repair (reported, not retried)."""

    code = "model_output_invalid"


def model_step(io: TurnIO) -> tuple[OrchestratorReply | None, tuple[ToolCall, ...]]:
    """Hydrate, assemble and call the model once: its reply, or the tools it calls."""
    deps = io.deps
    budget = deps.llm.budgets.for_profile(AGENT).history
    with io.tx() as cur:
        rows = history.load(cur, io.session_id)
        queue = approvals.pending(cur, limit=APPROVALS_SHOWN)
        brief = chat_store.brief_on(cur, deps.clock().date())
        answered = replies.recent(cur, deps.clock() - REPLIES_SINCE, REPLIES_SHOWN)
        icp = orgdata.active_icp(cur)
        org_name = orgdata.org_name(cur)
        decided = awaited(cur, rows)
    if history.plan(
        rows,
        budget=budget,
        count=deps.llm.counter.count,
        pending=pending(decided),
        current_turn=io.turn_id,
    ):
        compact_if_needed(io, current_turn=io.turn_id)
        with io.tx() as cur:
            rows = history.load(cur, io.session_id)
    if io.knowledge is None:
        io.knowledge = _retrieve(io)
    # The current turn's user row is the task; its tool rows go after it (below).
    mine = {"user", "summary"}  # a summary written mid-turn carries this turn's id too
    current = [r for r in rows if r.turn_id == io.turn_id and r.role not in mine]
    earlier = [r for r in rows if r.turn_id != io.turn_id or r.role == "summary"]
    summary_first = sorted(earlier, key=lambda r: (r.role != "summary", r.id))
    shown = [
        {
            "id": p["id"],
            "kind": p["kind"],
            "from": p["source_agent"],
            "summary": approval_queue.summary(p),
        }
        for p in queue
    ]
    entities: dict[str, Any] = {
        "daily_brief": (
            brief["content"][:BRIEF_CHARS] if brief else "(no daily brief has been written today)"
        ),
        "pending_approvals": shown or "(the approval queue is empty)",
        "recent_replies": [
            {
                "from": r["name"] or "a contact",
                "re": r["subject"],
                "sentiment": r["sentiment"],
                "received": r["received_at"].isoformat(),
                "text": str(r["body"])[:REPLY_CHARS],
            }
            for r in answered
        ]
        or "(no replies in the last 7 days)",
    }
    org = OrgContext(org_name=org_name, icp=IcpDefinition(**icp) if icp else None)
    request = AssemblyRequest(
        AGENT,
        io.org_id,
        io.turn_id,
        org,
        io.knowledge,
        entities,
        [history.to_message(r, decided) for r in summary_first],
        {"message": io.message},
        [ToolDefinition(**d) for d in tools.definitions()],
        kc_queried=tools.ALL_DOMAINS,  # what _retrieve asks the Knowledge Core for
        tool_rounds=[history.to_message(r, decided) for r in current],
        brief_id=str(brief["id"]) if brief else None,
    )
    try:
        result = call_agent(deps.llm, request)
    except OutputInvalid as error:
        raise OrchestratorFailed(str(error)) from None
    io.untrusted[:] = untrusted.merge(io.untrusted, result.assembled.untrusted_instructions)
    io.call_id = result.call_id or None
    assert result.output is None or isinstance(result.output, OrchestratorReply)
    return result.output, result.tool_calls


def _retrieve(io: TurnIO) -> list[Any]:
    hits = io.deps.knowledge.retrieve(io.org_id, io.message, tools.ALL_DOMAINS, KC_TOP)
    return to_exemplars(hits, top=KC_TOP)
