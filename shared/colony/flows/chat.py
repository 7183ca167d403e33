"""Flow 1, the chat turn of AGT-001 (SPEC §6.1; seed §4.2, §6.3, §7.6).

    POST /turns ─► session lock ─► user turn + ``accepted`` ─► [hydrate ─► model]*
        answer?    ─► ``delta``… ─► assistant turn ─► ``done``
        tool call? ─► ``tool_call`` ─► run it ─► ``tool_result`` ─► back to the model
        gated?     ─► approval item ─► ``approval_required`` ─► ``done`` (paused)
    approval of that item (any approval callback) ─► ``apply_tool_action`` ─► run the tool
        ─► ``tool_result`` ─► back to the model ─► ``delta``… ─► ``done``

Turns of one session are serialised by a transaction-scoped advisory lock on the session
(held by the database, so it holds across function instances); events are written to
``chat_events`` as they happen, each step's batch in one short transaction together with its
history rows, so a client that drops can replay from ``Last-Event-ID`` while the turn goes on.
A tool call's history row is written with its result, so no failure can leave a call without
one. The continuation after an approval is written in the approval's own transaction: it
appears, all at once, when that commits. Whatever fails, a turn ends with ``error`` + ``done``.

Hydration per model call: the history within AGT-001's budget (compacted into one summary
row when over, ``colony.chat.history``), today's daily brief and the pending approval items
as entity data, the top-3 Knowledge Core chunks for the message — all through the assembler,
whose per-section token account goes into the call's trace.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from colony.chat import events as ev
from colony.chat import history, tools
from colony.contracts.chat import OrchestratorReply
from colony.errors import (
    CallerError,
    NotFound,
    OutputInvalid,
    UpstreamError,
    ValidationFailed,
    public_body,
)
from colony.flows import approval_queue
from colony.flows.deps import FlowDeps
from colony.ports import ModelRequest, ToolCall
from colony.store import approvals, chat_events, orgdata
from colony.store import chat as chat_store

log = logging.getLogger("colony.chat")

AGENT = "AGT-001"
OUTPUT = "orchestrator_reply"
MAX_STEPS = 4  # model calls per turn: tool rounds are bounded
KC_TOP = 3
APPROVALS_SHOWN = 10
BRIEF_CHARS = 2400  # ≤250 words; a longer brief is clipped, not allowed to crowd the entity
DELTA_WORDS = 6

Sink = Callable[[Sequence[ev.Event]], None]


# ─── sessions ────────────────────────────────────────────────────────────────────────────


def create_session(deps: FlowDeps, org_id: str, user_id: str) -> str:
    with deps.db.transaction(org_id) as cur:
        return chat_store.create_session(cur, org_id, user_id)


def require_session(deps: FlowDeps, org_id: str, session_id: str) -> None:
    """NotFound unless the session exists in this org (RLS hides every other org's)."""
    with deps.db.transaction(org_id) as cur:
        if not chat_store.session_exists(cur, session_id):
            raise NotFound(f"chat session {session_id!r} does not exist in this org")


def check_message(deps: FlowDeps, message: str) -> str:
    """The message, stripped; empty or over AGT-001's task budget is a caller error."""
    text = message.strip()
    if not text:
        raise EmptyMessage("the message is empty; type something to ask")
    if "\x00" in text:  # PostgreSQL text cannot hold it: refuse before the stream starts
        raise ValidationFailed("the message contains a NUL character")
    limit = deps.llm.budgets.for_profile(AGENT).task
    used = deps.llm.counter.count(text)
    if used > limit:
        raise MessageTooLong(f"the message is {used} tokens; the limit is {limit}")
    return text


class EmptyMessage(ValidationFailed):
    code = "empty_message"


class MessageTooLong(ValidationFailed):
    code = "message_too_long"


def transcript(deps: FlowDeps, org_id: str, session_id: str) -> dict[str, Any]:
    """The session as the page shows it on load: its turns and the last event id."""
    with deps.db.transaction(org_id) as cur:
        if not chat_store.session_exists(cur, session_id):
            raise NotFound(f"chat session {session_id!r} does not exist in this org")
        rows = history.load(cur, session_id)
        last = chat_events.last_seq(cur, session_id) or 0
    turns = [
        {"id": r.id, "role": r.role, "content": r.content, "tool_call": r.tool_call} for r in rows
    ]
    return {"session_id": session_id, "last_event_id": last, "turns": turns}


def today_brief(deps: FlowDeps, org_id: str) -> dict[str, Any] | None:
    with deps.db.transaction(org_id) as cur:
        row = chat_store.brief_on(cur, deps.clock().date())
    if row is None:
        return None
    return {"date": row["brief_date"].isoformat(), "content": row["content"]}


# ─── one turn ────────────────────────────────────────────────────────────────────────────


@dataclass
class TurnIO:
    """Where a turn's writes go and who hears its events as they happen."""

    deps: FlowDeps
    org_id: str
    user_id: str
    session_id: str
    turn_id: str
    message: str
    tx: Callable[[], AbstractContextManager[Any]]
    sink: Sink | None = None
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    knowledge: list[Any] | None = None

    def emit(self, cur: Any, items: Sequence[tuple[str, dict[str, Any]]]) -> list[ev.Event]:
        stored = ev.append(cur, self.org_id, self.session_id, self.turn_id, items)
        return stored

    def deliver(self, stored: Sequence[ev.Event]) -> None:
        if self.sink is not None and stored:
            self.sink(stored)

    def write(
        self,
        items: Sequence[tuple[str, dict[str, Any]]],
        rows: Sequence[tuple[str, str, Mapping[str, Any] | None]] = (),
    ) -> list[ev.Event]:
        """Append turn rows and events together, then deliver the events."""
        with self.tx() as cur:
            for role, content, call in rows:
                chat_store.add_turn(
                    cur, self.org_id, self.session_id, self.turn_id, role, content, call
                )
            stored = self.emit(cur, items)
        self.deliver(stored)
        return stored


def run_turn(
    deps: FlowDeps,
    org_id: str,
    user_id: str,
    session_id: str,
    message: str,
    *,
    turn_id: str | None = None,
    sink: Sink | None = None,
) -> str:
    """Run one turn to its end (answer, pause or error); returns the turn id.

    Every event is persisted and handed to ``sink`` as it happens. An upstream failure is
    reported as an ``error`` event and a failed ``done``, never as a half-written turn.
    """
    turn_id = turn_id or f"turn-{uuid.uuid4().hex[:16]}"
    with deps.db.transaction(org_id) as lock:
        chat_store.lock_session(lock, session_id)
        io = TurnIO(
            deps,
            org_id,
            user_id,
            session_id,
            turn_id,
            message,
            tx=lambda: deps.db.transaction(org_id),
            sink=sink,
        )
        io.write([("accepted", {"session_id": session_id})], [("user", message, None)])
        _guarded(io, lambda: _loop(io))
    return turn_id


def _guarded(io: TurnIO, body: Callable[[], None]) -> None:
    """Run the turn's body; whatever fails, the turn ends with ``error`` + a failed ``done``
    in the log, so every follower (and a replay) sees it end. Our own faults
    (``InternalError``: a missing key, a broken template) and bugs then raise, to be logged
    and reported."""
    try:
        body()
    except (CallerError, UpstreamError) as error:
        # Caller errors carry their sentence; upstream ones a fixed one (no provider text).
        payload = public_body(error)
        log.warning("chat turn %s failed: %s", io.turn_id, error.code)
        io.write([("error", payload), ("done", {"status": "failed"})])
    except Exception as error:  # ours or a bug: end the turn (fixed message), then raise
        # Best effort: if the database is what failed, the original error is the one to raise.
        with contextlib.suppress(Exception):
            io.write([("error", public_body(error)), ("done", {"status": "failed"})])
        raise


def _loop(io: TurnIO) -> None:
    for _ in range(MAX_STEPS):
        reply, calls = _model_step(io)
        if not calls:
            assert reply is not None
            _answer(io, reply.answer)
            return
        for call in calls:
            if _tool_call(io, call) == "paused":
                return
    problem = {
        "code": "too_many_steps",
        "message": f"the orchestrator called tools {MAX_STEPS} times without answering",
    }
    io.write([("error", {"error": problem}), ("done", {"status": "failed"})])


def _answer(io: TurnIO, text: str) -> None:
    deltas = [("delta", {"text": chunk}) for chunk in _chunks(text)]
    _finish(io, {"status": "completed"}, deltas, [("assistant", text, None)])


def _finish(
    io: TurnIO,
    done: dict[str, Any],
    items: Sequence[tuple[str, dict[str, Any]]] = (),
    rows: Sequence[tuple[str, str, Mapping[str, Any] | None]] = (),
) -> None:
    """Write the turn's last rows and events and say ``done``; when a client sees ``done``,
    the stored history is within its budget. Usually one transaction: only a turn that took
    the history over budget commits its rows first, then compacts (a model call) and says
    ``done`` after, so a failed summary never loses the answer."""
    budget = io.deps.llm.budgets.for_profile(AGENT).history
    with io.tx() as cur:
        for role, content, call in rows:
            chat_store.add_turn(cur, io.org_id, io.session_id, io.turn_id, role, content, call)
        stored_rows = history.load(cur, io.session_id)
        over = history.tokens(stored_rows, io.deps.llm.counter.count) > budget
        stored = io.emit(cur, [*items, *([] if over else [("done", {**done, "compacted": 0})])])
    io.deliver(stored)
    if over:
        folded = _compact_if_needed(io, current_turn=None)
        io.write([("done", {**done, "compacted": folded})])


def _chunks(text: str) -> Iterator[str]:
    """The answer in small pieces for progressive rendering (whitespace kept)."""
    words = text.split(" ")
    for i in range(0, len(words), DELTA_WORDS):
        piece = " ".join(words[i : i + DELTA_WORDS])
        yield piece if i + DELTA_WORDS >= len(words) else piece + " "


def _tool_call(io: TurnIO, call: ToolCall) -> str:
    call_id = call.id or tools.new_call_id()
    args_view = dict(call.arguments)
    call_row = (
        "assistant",
        f"[tool call {call.name} {_json(args_view)}]",
        {"id": call_id, "name": call.name, "arguments": args_view},
    )
    announce = ("tool_call", {"call_id": call_id, "name": call.name, "arguments": args_view})
    try:
        tool, args = tools.parse_args(call.name, call.arguments)
    except CallerError as error:
        problem = {"code": error.code, "message": str(error)}
        result_row = (
            "tool",
            _json({"ok": False, "error": problem}),
            {"id": call_id, "name": call.name, "status": "result"},
        )
        io.write(
            [announce, ("error", {"call_id": call_id, "error": problem})], [call_row, result_row]
        )
        io.tool_results.append({"name": call.name, "ok": False, "error": problem})
        return "error"
    if tool.gated:
        return _pause(io, call_id, tool, args, call_row, announce)
    io.write([announce])
    outcome = tools.run(tool, _ctx(io, call_id), args)
    _record_result(io, call_id, tool.name, outcome, call_row)
    return "ran"


def _record_result(
    io: TurnIO, call_id: str, name: str, outcome: dict[str, Any], call_row: Any = None
) -> None:
    """The result's row and event; with the call's row too (written only now, so a tool that
    fails never leaves a call without its result in the history)."""
    row = ("tool", _json(_clip_result(outcome)), {"id": call_id, "name": name, "status": "result"})
    io.write(
        [("tool_result", {"call_id": call_id, "name": name, **outcome})],
        [call_row, row] if call_row else [row],
    )
    io.tool_results.append({"name": name, **outcome})


def _pause(
    io: TurnIO, call_id: str, tool: tools.Tool, args: Any, call_row: Any, announce: Any
) -> str:
    arguments = args.model_dump(mode="json", exclude_none=True)
    payload = {
        "session_id": io.session_id,
        "turn_id": io.turn_id,
        "call_id": call_id,
        "tool": tool.name,
        "arguments": arguments,
        "message": io.message,
        "requested_by": io.user_id,
    }
    with io.tx() as cur:
        approval_id = approvals.add(
            cur,
            io.org_id,
            "tool_action",
            "AGT-001",
            payload,
            subject_id=io.session_id,
            run_id=io.turn_id,
        )
        waiting = (
            "tool",
            f"[{tool.name} awaits approval item {approval_id}]",
            {"id": call_id, "name": tool.name, "status": "awaiting", "approval_id": approval_id},
        )
        for role, content, call in (call_row, waiting):
            chat_store.add_turn(cur, io.org_id, io.session_id, io.turn_id, role, content, call)
        card = {
            "id": approval_id,
            "kind": "tool_action",
            "tool": tool.name,
            "arguments": arguments,
            "summary": approval_queue.summary({"kind": "tool_action", "payload": payload}),
        }
        stored = io.emit(
            cur, [announce, ("approval_required", {"call_id": call_id, "approval": card})]
        )
    io.deliver(stored)
    _finish(io, {"status": "paused", "approval_id": approval_id})
    return "paused"


def _ctx(io: TurnIO, call_id: str) -> tools.ToolContext:
    return tools.ToolContext(io.deps, io.org_id, io.user_id, io.session_id, call_id)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


RESULT_CHARS = 1600


def _clip_result(outcome: Mapping[str, Any]) -> Any:
    """What the history keeps of a tool result: bounded, so one result cannot eat the window."""
    text = _json(outcome)
    if len(text) <= RESULT_CHARS:
        return outcome
    return {"ok": outcome.get("ok"), "clipped": text[: RESULT_CHARS - 40] + "…"}


# ─── hydration and the model call ────────────────────────────────────────────────────────


def _model_step(io: TurnIO) -> tuple[OrchestratorReply | None, tuple[ToolCall, ...]]:
    from colony.context.assembler import AssemblyRequest, assemble
    from colony.contracts import IcpDefinition, OrgContext, ToolDefinition

    deps = io.deps
    budget = deps.llm.budgets.for_profile(AGENT).history
    with io.tx() as cur:
        rows = history.load(cur, io.session_id)
        pending = approvals.pending(cur, limit=APPROVALS_SHOWN)
        brief = chat_store.brief_on(cur, deps.clock().date())
        icp = orgdata.active_icp(cur)
        org_name = orgdata.org_name(cur)
        decided = _awaited(cur, rows)
    if history.plan(
        rows,
        budget=budget,
        count=deps.llm.counter.count,
        pending=_pending(decided),
        current_turn=io.turn_id,
    ):
        _compact_if_needed(io, current_turn=io.turn_id)
        with io.tx() as cur:
            rows = history.load(cur, io.session_id)
    if io.knowledge is None:
        io.knowledge = _retrieve(io)
    # The current turn's user row is the task; its tool rows go after it (below).
    mine = {"user", "summary"}  # a summary written mid-turn carries this turn's id too
    current = [r for r in rows if r.turn_id == io.turn_id and r.role not in mine]
    earlier = [r for r in rows if r.turn_id != io.turn_id or r.role == "summary"]
    summary_first = sorted(earlier, key=lambda r: (r.role != "summary", r.id))
    messages = [history.to_message(r, decided) for r in (*summary_first, *current)]
    shown = [
        {
            "id": p["id"],
            "kind": p["kind"],
            "from": p["source_agent"],
            "summary": approval_queue.summary(p),
        }
        for p in pending
    ]
    entities: dict[str, Any] = {
        "daily_brief": (
            brief["content"][:BRIEF_CHARS] if brief else "(no daily brief has been written today)"
        ),
        "pending_approvals": shown or "(the approval queue is empty)",
    }
    org = OrgContext(org_name=org_name, icp=IcpDefinition(**icp) if icp else None)
    definitions = tools.definitions()
    request = AssemblyRequest(
        AGENT,
        io.org_id,
        io.turn_id,
        org,
        io.knowledge,
        entities,
        messages,
        {"message": io.message},
        [ToolDefinition(**d) for d in definitions],
    )
    assembled = assemble(request, budgets=deps.llm.budgets, counter=deps.llm.counter)
    sent = list(assembled.messages)
    kept_current = min(len(current), len(sent) - 2)
    if kept_current > 0:  # order: …history, the user's message, this turn's tool rounds
        task = sent.pop()
        sent.insert(len(sent) - kept_current, task)
    context = {
        "message": io.message,
        "tool_results": list(io.tool_results),
        "tools": [d["name"] for d in definitions],
        "pending_approvals": shown,
        "daily_brief": brief["content"] if brief else None,
        "knowledge": [{"domain": e.domain, "title": e.title} for e in io.knowledge],
    }
    model_request = ModelRequest(
        model=deps.llm.model,
        messages=tuple(sent),
        output_name=OUTPUT,
        output_schema=OrchestratorReply.model_json_schema(),
        tools=tuple(definitions),
        context=context,
        metadata={
            "org_id": io.org_id,
            "run_id": io.turn_id,
            "agent_id": AGENT,
            "kc_domains_queried": list(assembled.kc_domains),
            "context_budget_used": dict(assembled.account),
        },
    )
    try:
        result = deps.llm.runner.run(model_request, OrchestratorReply)
    except OutputInvalid as error:
        raise OrchestratorFailed(str(error)) from None
    return result.output, result.tool_calls


class OrchestratorFailed(ValidationFailed):
    """The model's answer broke its contract even after a repair (reported, not retried)."""

    code = "model_output_invalid"


def _awaited(cur: Any, rows: Sequence[history.Row]) -> dict[str, str]:
    """The status of each approval item a paused call in ``rows`` waits on."""
    # By id: not the queue's newest N, which a long queue (one outbound message per
    # prospect) would push them out of.
    waiting = [a for r in rows if (a := r.awaiting)]
    if not waiting:
        return {}
    return approvals.statuses(cur, waiting)


def _pending(statuses: Mapping[str, str]) -> set[str]:
    return {item for item, status in statuses.items() if status == "pending"}


def _retrieve(io: TurnIO) -> list[Any]:
    from colony.knowledge.exemplars import to_exemplars

    hits = io.deps.knowledge.retrieve(io.org_id, io.message, tools.ALL_DOMAINS, KC_TOP)
    return to_exemplars(hits, top=KC_TOP)


# ─── summarisation (seed §6.3) ───────────────────────────────────────────────────────────


def _compact_if_needed(io: TurnIO, *, current_turn: str | None) -> int:
    """Fold the oldest turns into the one summary row when over budget; returns rows folded.

    Runs in one transaction: the folded rows and the old summary go, the new summary comes,
    or nothing changes.
    """
    from colony.context.assembler import AssemblyRequest
    from colony.contracts import IcpDefinition, OrgContext
    from colony.llm.agent_call import call_agent

    deps = io.deps
    budget = deps.llm.budgets.for_profile(AGENT).history
    with io.tx() as cur:
        rows = history.load(cur, io.session_id)
        folded = history.plan(
            rows,
            budget=budget,
            count=deps.llm.counter.count,
            pending=_pending(_awaited(cur, rows)),
            current_turn=current_turn,
        )
        if not folded:
            return 0
        old, previous = history.previous_summary(rows)
        icp = orgdata.active_icp(cur)
        org = OrgContext(org_name=orgdata.org_name(cur), icp=IcpDefinition(**icp) if icp else None)
        turns = history.transcript(folded)
        task = {
            "previous_summary": _json(previous) if previous else "(none)",
            "turns": "\n".join(f"{t['role']}: {t['content']}" for t in turns),
        }
        request = AssemblyRequest("AGT-001/summary", io.org_id, io.turn_id, org, task=task)
        result = call_agent(
            deps.llm,
            request,
            provider_context={"turns": turns, "previous_summary": previous},
            max_output_tokens=400,
        )
        assert result.output is not None
        summary, text = history.fit_summary(
            result.output.model_dump(mode="json"), deps.llm.counter.count
        )
        gone = [r.id for r in folded] + ([old.id] if old else [])
        chat_store.delete_turns(cur, io.session_id, gone)
        chat_store.add_turn(
            cur, io.org_id, io.session_id, io.turn_id, "summary", text, {"summary": summary}
        )
    log.info("chat session %s: folded %d turns into its summary", io.session_id, len(folded))
    return len(folded)


# ─── the approval applier: resume a paused turn ──────────────────────────────────────────


def apply_tool_action(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """Run an approved gated tool and continue its turn (``APPLIERS["tool_action"]``).

    Runs inside the approval decision's transaction: it takes the session's lock (waiting for
    a turn in progress), and writes the result, the model's continuation and their events
    on the decision's cursor, so they commit — and reach the session's followers — with the
    decision. Idempotent: a call that already has its result is not run again, and the tool
    runners themselves are idempotent on the call id. A tool that fails upstream raises (the
    decision rolls back); once the result is recorded, a continuation failing upstream is an
    ``error`` event and the decision stands, while one failing by our fault (``InternalError``)
    or a bug raises too, so it is reported and approving again retries it.
    """
    session_id = str(payload["session_id"])
    call_id = str(payload["call_id"])
    chat_store.lock_session(cur, session_id)
    if chat_store.has_tool_result(cur, session_id, call_id):
        return
    requested_by = str(payload.get("requested_by") or "approval")
    turn_id = f"turn-{uuid.uuid4().hex[:16]}"
    message = str(payload.get("message") or "")
    io = TurnIO(
        deps, org_id, requested_by, session_id, turn_id, message, tx=lambda: nullcontext(cur)
    )
    accepted = {"session_id": session_id, "resumes": payload.get("turn_id"), "approval_id": item_id}
    io.write([("accepted", accepted)])
    tool, args = tools.parse_args(str(payload["tool"]), payload.get("arguments") or {})
    # Unguarded: a tool that fails upstream must fail the decision (rolled back, so the item
    # stays pending and approving again retries it), not commit it as applied.
    outcome = tools.run(tool, _ctx(io, call_id), args)
    _record_result(io, call_id, tool.name, outcome)
    _guarded(io, lambda: _loop(io))
