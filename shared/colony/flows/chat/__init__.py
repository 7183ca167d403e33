"""Flow 1, the chat turn of AGT-001 (SPEC §6.1; seed §4.2, §6.3, §7.6), one module per job.

    POST /turns ─► session lock ─► user turn + ``accepted`` ─► [hydrate ─► model]*
        answer?    ─► ``delta``… ─► assistant turn ─► ``done``
        tool call? ─► ``tool_call`` ─► run it ─► ``tool_result`` ─► back to the model
        gated?     ─► approval item ─► ``approval_required`` ─► ``done`` (paused)
    approval of that item (any approval callback) ─► ``apply_tool_action`` ─► run the tool
        ─► ``tool_result`` ─► back to the model ─► ``delta``… ─► ``done``

    session      create / require a session, vet a message, transcript, today's brief
    turn         the locked turn: model rounds, answer, tool calls, pause for approval
    hydration    one model call: history + brief + pending approvals + KC → assembler → model
    compaction   rolling summaries: fold the oldest turns into the session's one summary row
    resume       the ``tool_action`` applier: run the approved tool, continue the paused turn
    turn_io      what they share: a turn's writes (rows + events) and its event sink
    tools        AGT-001's actions: they call the approval flows and dispatch to other agents
    history      the rolling window: load the rows, plan what to fold (pure)
    events       the session's SSE event log, appended by the turn, replayed by the edge

Each imports only the ones below it in that list, checked by an import contract in
``pyproject.toml``; nothing here imports ``colony.chat``, the HTTP edge that calls what is
exported here. ``colony.runtime.appliers`` names ``resume.apply_tool_action``.
"""

from typing import TYPE_CHECKING

from colony.lazy import lazy_names

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.flows.chat.hydration import OrchestratorFailed
    from colony.flows.chat.resume import apply_tool_action
    from colony.flows.chat.session import (
        EmptyMessage,
        MessageTooLong,
        check_message,
        create_session,
        require_session,
        today_brief,
        transcript,
    )
    from colony.flows.chat.tools import proposed
    from colony.flows.chat.turn import run_turn
    from colony.flows.chat.turn_io import Sink, TurnIO

# Loaded on first use (PEP 562): the chat function's page routes take what ``session`` offers
# and load no model stack; the turn (hydration, tools, the model call) loads with the first one.
_HOMES = {
    "OrchestratorFailed": "colony.flows.chat.hydration",
    "apply_tool_action": "colony.flows.chat.resume",
    "EmptyMessage": "colony.flows.chat.session",
    "MessageTooLong": "colony.flows.chat.session",
    "check_message": "colony.flows.chat.session",
    "create_session": "colony.flows.chat.session",
    "require_session": "colony.flows.chat.session",
    "today_brief": "colony.flows.chat.session",
    "transcript": "colony.flows.chat.session",
    "proposed": "colony.flows.chat.tools",
    "run_turn": "colony.flows.chat.turn",
    "Sink": "colony.flows.chat.turn_io",
    "TurnIO": "colony.flows.chat.turn_io",
}

__all__ = [
    "EmptyMessage",
    "MessageTooLong",
    "OrchestratorFailed",
    "Sink",
    "TurnIO",
    "apply_tool_action",
    "check_message",
    "create_session",
    "proposed",
    "require_session",
    "run_turn",
    "today_brief",
    "transcript",
]


__getattr__ = lazy_names(__name__, _HOMES)
