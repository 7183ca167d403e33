"""The approval applier for ``tool_action`` items: run the approved tool, resume its turn.

    approval of that item (any approval callback) ─► ``apply_tool_action`` ─► run the tool
        ─► ``tool_result`` ─► back to the model ─► ``delta``… ─► ``done``

``colony.runtime.appliers.applier("tool_action")`` names it. It is apart from
the turn because it runs somewhere else: inside another flow's transaction, in whichever function
decided the item, with no client listening. The continuation is written in the approval's own
transaction: it appears, all at once, when that commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from colony.flows.chat import tools
from colony.flows.chat.turn import continue_turn, record_result, tool_context
from colony.flows.chat.turn_io import TurnIO
from colony.flows.deps import FlowDeps
from colony.store import chat as chat_store
from colony.store.approvals import approvals


def apply_tool_action(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """Run an approved gated tool and continue its turn
    (``colony.runtime.appliers``).

    The tool runs as approved by the person who decided the item (``ToolContext.approved_by``:
    research is asked for in their name). Runs inside the approval decision's transaction: it
    takes the session's lock (waiting for a turn in progress), and writes the result, the
    model's continuation and their events on the decision's cursor, so they commit — and
    reach the session's followers — with the decision. Idempotent: a call that already has
    its result is not run again, and the tool runners themselves are idempotent on the call
    id. A tool that fails upstream raises (the decision rolls back); once the result is
    recorded, a continuation failing upstream is an ``error`` event and the decision stands,
    while one failing by our fault (``InternalError``) or a bug raises too, so it is reported
    and approving again retries it.
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
    # The decision is written on this cursor already: the person who made it runs the tool.
    decided = approvals.decided(cur, [item_id])
    approved_by = str(decided[0]["decided_by"]) if decided and decided[0]["decided_by"] else None
    # Unguarded: a tool that fails upstream must fail the decision (rolled back, so the item
    # stays pending and approving again retries it), not commit it as applied.
    outcome = tools.run(tool, tool_context(io, call_id, approved_by), args)
    record_result(io, call_id, tool.name, outcome)
    continue_turn(io)
