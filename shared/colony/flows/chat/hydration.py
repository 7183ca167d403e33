"""Hydration and the model call: one step of a turn, from stored state to AGT-001's reply.

The call streams: the reply's text reaches the turn's client as the model writes it
(``turn_io.AnswerDeltas``).

Per model call: the history within AGT-001's budget (compacted first when over,
``colony.flows.chat.compaction``; usually the turn's write before already did), today's
daily brief and the pending approval items as entity data, the latest replies to our
messages (their own text: untrusted, so inside the entity data block like everything
there), the top-3 Knowledge Core chunks for the message — all through the assembler, whose
per-section token account goes into the call's trace.
The turn's first step reads all of it in one transaction (one statement, ``store.chat
.hydrate``, and the retrieval), with the user's message and ``accepted`` written first in
it; later steps of the turn reuse it, with the rows the turn wrote since (the turn holds
the session's lock: nothing else writes its history). Apart from the turn so what the
model sees is read in one place, and the turn only acts on its answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from colony.context import untrusted
from colony.context.assembler import AssemblyRequest
from colony.contracts import IcpDefinition, OrgContext
from colony.contracts.chat import OrchestratorReply
from colony.errors import OutputInvalid, ValidationFailed
from colony.flows.approvals import approval_queue
from colony.flows.chat import history, tools
from colony.flows.chat.compaction import fold_ahead, pending
from colony.flows.chat.history import AGENT
from colony.flows.chat.turn_io import AnswerDeltas, TurnIO
from colony.knowledge.exemplars import to_exemplars
from colony.llm.agent_call import call_agent
from colony.observability.call_records import deferred_records
from colony.ports import ToolCall
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


@dataclass(frozen=True)
class Hydrated:
    """What a turn's first model step read besides the history (kept for its later steps:
    the turn holds the session's lock, and a tool's result reaches the model anyway)."""

    queue: list[dict[str, Any]]
    brief: dict[str, Any] | None
    replies: list[dict[str, Any]]
    icp: dict[str, Any] | None
    org_name: str | None
    decided: dict[str, str]


def hydrate(io: TurnIO) -> None:
    """Read what the model step needs in one statement (``store.chat.hydrate``)."""
    now = io.deps.clock()
    retrieve = io.knowledge is None and io.search_tx is not None
    with (io.search_tx if retrieve and io.search_tx else io.tx)() as cur:
        # What the turn holds for its next transaction (its user row and ``accepted``) first:
        # the turn's own user row is then among the turns read.
        stored = io.emit(cur, []) if io.holding else []
        got = chat_store.hydrate(
            cur,
            io.session_id,
            day=now.date(),
            replies_since=now - REPLIES_SINCE,
            approvals_shown=APPROVALS_SHOWN,
            replies_shown=REPLIES_SHOWN,
        )
        if retrieve:  # the message's KC chunks, once per turn, in the same transaction
            hits = io.deps.knowledge.retrieve_in(
                cur, io.org_id, io.message, tools.ALL_DOMAINS, KC_TOP
            )
            io.knowledge = to_exemplars(hits, top=KC_TOP)
    io.deliver(stored)
    io.rows = [
        history.Row(int(t["id"]), t["role"], t["content"], t["tool_call"], t["turn_id"])
        for t in got["turns"]
    ]
    io.hydrated = Hydrated(
        queue=list(got["queue"]),
        brief=got["brief"],
        replies=[
            {**r, "received_at": datetime.fromisoformat(r["received_at"]).astimezone(UTC)}
            for r in got["replies"]
        ],
        icp=got["icp"],
        org_name=got["org_name"],
        decided={str(k): str(v) for k, v in (got["awaited"] or {}).items()},
    )


def model_step(io: TurnIO) -> tuple[OrchestratorReply | None, tuple[ToolCall, ...]]:
    """Hydrate (on the turn's first step), assemble and call the model once: its reply, or
    the tools it calls."""
    deps = io.deps
    budget = deps.llm.budgets.for_profile(AGENT).history
    if io.rows is None or io.hydrated is None:
        hydrate(io)
    assert io.rows is not None and isinstance(io.hydrated, Hydrated)
    seen = io.hydrated
    rows, decided = io.rows, seen.decided
    queue, brief, answered = seen.queue, seen.brief, seen.replies
    icp, org_name = seen.icp, seen.org_name
    if history.plan(
        rows,
        budget=budget,
        count=deps.llm.counter.count,
        pending=pending(decided),
        current_turn=io.turn_id,
    ):
        # Planned from the rows the turn holds; stored in one statement, which also puts
        # them right in ``io.rows`` (no read again).
        fold = fold_ahead(io, [], current_turn=io.turn_id)
        if fold is not None:
            io.write([], fold.rows, gone=fold.gone)
            rows = io.rows
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
        tools.definitions(),
        kc_queried=tools.ALL_DOMAINS,  # what _retrieve asks the Knowledge Core for
        tool_rounds=[history.to_message(r, decided) for r in current],
        brief_id=str(brief["id"]) if brief else None,
    )
    io.answer = AnswerDeltas(io)
    try:
        with deferred_records(io.records):  # kept with the turn's next write
            result = call_agent(deps.llm, request, stream=io.answer)
    except OutputInvalid as error:
        raise OrchestratorFailed(str(error)) from None
    io.untrusted[:] = untrusted.merge(io.untrusted, result.assembled.untrusted_instructions)
    io.call_id = result.call_id or None
    assert result.output is None or isinstance(result.output, OrchestratorReply)
    return result.output, result.tool_calls


def _retrieve(io: TurnIO) -> list[Any]:
    hits = io.deps.knowledge.retrieve(io.org_id, io.message, tools.ALL_DOMAINS, KC_TOP)
    return to_exemplars(hits, top=KC_TOP)
