"""One chat turn of AGT-001 (SPEC §6.1; seed §4.2, §7.6): lock, model rounds, answer or pause.

    POST /turns ─► session lock ─► user turn + ``accepted`` ─► [hydrate ─► model]*
        answer?    ─► ``delta``… (as the model streams it) ─► assistant turn ─► ``done``
        tool call? ─► ``tool_call`` ─► run it ─► ``tool_result`` ─► back to the model
        gated?     ─► approval item ─► ``approval_required`` ─► ``done`` (paused)

Turns of one session are serialised by a transaction-scoped advisory lock on the session
(held by the database, so it holds across function instances); events are written to
``chat_events`` as they happen, each step's batch in one short transaction together with its
history rows, so a client that drops can replay from ``Last-Event-ID`` while the turn goes on.
The answer's deltas reach the client as the model streams them, and are stored with the
turn's next write under the ids they were sent with (``turn_io``).
A tool call's history row is written with its result, so no failure can leave a call without
one. Whatever fails, a turn ends with ``error`` + ``done``, and what is not the caller's fault
is reported to Sentry tagged with the org, the turn (as its run) and AGT-001, as is a tool
call the tools refuse (``tool_call_parse``). What the model sees is built in
``hydration``; an approved gated call continues here through ``continue_turn`` (``resume``).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from colony.error_bodies import public_body
from colony.errors import CallerError, UpstreamError
from colony.flows.approvals import approval_queue
from colony.flows.chat import history, tools
from colony.flows.chat.compaction import compact_if_needed, fold_ahead
from colony.flows.chat.history import AGENT
from colony.flows.chat.hydration import model_step
from colony.flows.chat.turn_io import Rows, Sink, TurnIO, compact_json
from colony.flows.deps import FlowDeps
from colony.knowledge.store import SEARCH_SETTINGS
from colony.observability import categories, sentry
from colony.ports import ToolCall
from colony.store import chat as chat_store
from colony.store.approvals import approvals

log = logging.getLogger("colony.chat")

MAX_STEPS = 4  # model calls per turn: tool rounds are bounded
RESULT_CHARS = 1600


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
    with deps.db.transaction(org_id, advisory_lock=chat_store.session_lock(session_id)):
        io = TurnIO(
            deps,
            org_id,
            user_id,
            session_id,
            turn_id,
            message,
            tx=lambda: deps.db.transaction(org_id),
            sink=sink,
            search_tx=lambda: deps.db.transaction(org_id, settings=SEARCH_SETTINGS),
        )
        # Stored (and sent) with the first model step's reads, in their transaction.
        io.write_soon([("accepted", {"session_id": session_id})], [("user", message, None)])
        continue_turn(io)
    return turn_id


def continue_turn(io: TurnIO) -> None:
    """Model rounds until the turn answers, pauses or fails, under the turn's guard."""
    _guarded(io, lambda: _loop(io))


def _guarded(io: TurnIO, body: Callable[[], None]) -> None:
    """Run the turn's body; whatever fails, the turn ends with ``error`` + a failed ``done``
    in the log, so every follower (and a replay) sees it end. Our own faults
    (``InternalError``: a missing key, a broken template) and bugs then raise, to be logged
    and reported."""
    with sentry.error_scope(io.org_id, io.turn_id, AGENT, capture=False):
        try:
            body()
        except (CallerError, UpstreamError) as error:
            # Caller errors carry their sentence; upstream ones a fixed one (no provider text).
            payload = public_body(error)
            log.warning("chat turn %s failed: %s", io.turn_id, error.code)
            sentry.report(error)  # an upstream failure, not the caller's: Sentry sees it too
            io.write([("error", payload), ("done", {"status": "failed"})])
        except Exception as error:  # ours or a bug: end the turn (fixed message), then raise
            sentry.report(error)  # here, with the turn's tags (the stream's thread logs it)
            # Best effort: if the database is what failed, the original error is the one to
            # raise.
            with contextlib.suppress(Exception):
                io.write([("error", public_body(error)), ("done", {"status": "failed"})])
            raise


def _loop(io: TurnIO) -> None:
    for _ in range(MAX_STEPS):
        reply, calls = model_step(io)
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
    """Store the answer streamed so far (and, if the validated answer differs from what was
    streamed, the delta that puts it right) with the assistant row, then ``done``."""
    closing = io.answer.closing(text) if io.answer is not None else [("delta", {"text": text})]
    _finish(io, {"status": "completed"}, closing, [("assistant", text, None)])


def _finish(
    io: TurnIO,
    done: dict[str, Any],
    items: Sequence[tuple[str, dict[str, Any]]] = (),
    rows: Rows = (),
) -> None:
    """Write the turn's last rows and events and say ``done``; when a client sees ``done``,
    the stored history is within its budget (``_write_folding``: in the same statement).
    A turn that did not read the history itself (a resumed one) commits its rows first,
    then compacts (a model call) and says ``done`` after."""
    if _write_folding(io, items, rows, current_turn=None, done=done):
        return
    budget = io.deps.llm.budgets.for_profile(AGENT).history
    count = io.deps.llm.counter.count
    new = [r for r in rows if r is not None]
    with io.tx() as cur:
        known = history.load(cur, io.session_id)
        over = history.tokens(known, count) + sum(count(r[1]) for r in new) > budget
        done_now = [] if over else [("done", {**done, "compacted": 0})]
        stored = io.emit(cur, [*items, *done_now], new)
    io.deliver(stored)
    if over:
        folded = compact_if_needed(io, current_turn=None)
        io.write([("done", {**done, "compacted": folded})])


def _write_folding(
    io: TurnIO,
    items: Sequence[tuple[str, dict[str, Any]]],
    rows: Rows,
    *,
    current_turn: str | None,
    done: dict[str, Any] | None = None,
) -> bool:
    """Write ``items`` and ``rows`` (then ``done``, with the rows it folded) in one statement,
    with the compaction they take the history over budget into (``fold_ahead``: the summary
    is asked for first), so a turn that compacts takes no more round trips than one that does
    not; ``current_turn``'s rows are kept out of the fold (the model still needs them). If
    the summary fails, the rows are stored without it before the failure ends the turn: a
    failed summary never loses an answer or a result. False (nothing written): the turn does
    not hold the history (a resumed one)."""
    if io.rows is None or io.hydrated is None:
        return False
    new = [r for r in rows if r is not None]
    try:
        fold = fold_ahead(io, new, current_turn=current_turn)
    except Exception:
        io.write(items, new)
        raise
    end = [] if done is None else [("done", {**done, "compacted": fold.folded if fold else 0})]
    with io.tx() as cur:
        stored = io.emit(
            cur,
            [*items, *end],
            fold.rows if fold is not None else new,
            gone=fold.gone if fold is not None else (),
        )
    io.deliver(stored)
    return True


def _tool_call(io: TurnIO, call: ToolCall) -> str:
    call_id = call.id or tools.new_call_id()
    args_view = dict(call.arguments)
    call_row = (
        "assistant",
        f"[tool call {call.name} {compact_json(args_view)}]",
        {"id": call_id, "name": call.name, "arguments": args_view},
    )
    announce = ("tool_call", {"call_id": call_id, "name": call.name, "arguments": args_view})
    try:
        tool, args = tools.parse_args(call.name, call.arguments)
    except CallerError as error:
        categories.report(
            "tool_call_parse", error, org_id=io.org_id, run_id=io.turn_id, agent_id=AGENT
        )
        problem = {"code": error.code, "message": str(error)}
        result_row = (
            "tool",
            compact_json({"ok": False, "error": problem}),
            {"id": call_id, "name": call.name, "status": "result"},
        )
        io.write(
            [announce, ("error", {"call_id": call_id, "error": problem})], [call_row, result_row]
        )
        io.tool_results.append({"name": call.name, "ok": False, "error": problem})
        return "error"
    refused = tools.refusal(tool, io.deps, io.org_id) if tool.gated else None
    if tool.gated and refused is None:
        return _pause(io, call_id, tool, args, call_row, announce)
    io.announce([announce])  # stored with its result (or with the turn's error)
    outcome = refused or tools.run(tool, tool_context(io, call_id), args)
    record_result(io, call_id, tool.name, outcome, call_row)
    return "ran"


def record_result(
    io: TurnIO, call_id: str, name: str, outcome: dict[str, Any], call_row: Any = None
) -> None:
    """The result's row and event; with the call's row too (written only now, so a tool that
    fails never leaves a call without its result in the history)."""
    row = (
        "tool",
        compact_json(_clip_result(outcome)),
        {"id": call_id, "name": name, "status": "result"},
    )
    items = [("tool_result", {"call_id": call_id, "name": name, **outcome})]
    rows = [call_row, row] if call_row else [row]
    # A long result can take the history over budget: folded here, not before the next call.
    if not _write_folding(io, items, rows, current_turn=io.turn_id):
        io.write(items, rows)
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
    if io.untrusted:  # the card shows what the model read that tried to give orders
        payload["untrusted_instructions"] = list(io.untrusted)
    with io.tx() as cur:
        approval_id = approvals.add(
            cur,
            io.org_id,
            "tool_action",
            "AGT-001",
            payload,
            subject_id=io.session_id,
            run_id=io.turn_id,
            call_id=io.call_id,
        )
        waiting = (
            "tool",
            f"[{tool.name} awaits approval item {approval_id}]",
            {"id": call_id, "name": tool.name, "status": "awaiting", "approval_id": approval_id},
        )
        card = {
            "id": approval_id,
            "kind": "tool_action",
            "tool": tool.name,
            "arguments": arguments,
            "summary": approval_queue.summary({"kind": "tool_action", "payload": payload}),
        }
        if io.untrusted:
            card["untrusted_instructions"] = list(io.untrusted)
        stored = io.emit(
            cur,
            [announce, ("approval_required", {"call_id": call_id, "approval": card})],
            (call_row, waiting),
        )
    io.deliver(stored)
    _finish(io, {"status": "paused", "approval_id": approval_id})
    return "paused"


def tool_context(io: TurnIO, call_id: str, approved_by: str | None = None) -> tools.ToolContext:
    return tools.ToolContext(io.deps, io.org_id, io.user_id, io.session_id, call_id, approved_by)


def _clip_result(outcome: Mapping[str, Any]) -> Any:
    """What the history keeps of a tool result: bounded, so one result cannot eat the window."""
    text = compact_json(outcome)
    if len(text) <= RESULT_CHARS:
        return outcome
    return {"ok": outcome.get("ok"), "clipped": text[: RESULT_CHARS - 40] + "…"}
