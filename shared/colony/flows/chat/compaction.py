"""Rolling summaries (seed §6.3): fold a session's oldest turns into its one summary row.

``colony.flows.chat.history`` decides *what* to fold (pure: units, pins, the budget); this module
does it: reads the rows and the approval items that pin paused calls, asks AGT-001's summary
profile for the new summary, and swaps the folded rows for it in one transaction. Apart from
hydration because it runs from two places, before a model call and after a turn's last write.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.contracts import IcpDefinition, OrgContext
from colony.flows.chat import history
from colony.flows.chat.turn_io import AGENT, TurnIO, compact_json
from colony.llm.agent_call import call_agent
from colony.store import approvals, orgdata
from colony.store import chat as chat_store

log = logging.getLogger("colony.chat")


def compact_if_needed(io: TurnIO, *, current_turn: str | None) -> int:
    """Fold the oldest turns into the one summary row when over budget; returns rows folded.

    Runs in one transaction: the folded rows and the old summary go, the new summary comes,
    or nothing changes.
    """
    deps = io.deps
    budget = deps.llm.budgets.for_profile(AGENT).history
    with io.tx() as cur:
        rows = history.load(cur, io.session_id)
        folded = history.plan(
            rows,
            budget=budget,
            count=deps.llm.counter.count,
            pending=pending(awaited(cur, rows)),
            current_turn=current_turn,
        )
        if not folded:
            return 0
        old, previous = history.previous_summary(rows)
        icp = orgdata.active_icp(cur)
        org = OrgContext(org_name=orgdata.org_name(cur), icp=IcpDefinition(**icp) if icp else None)
        turns = history.transcript(folded)
        task = {
            "previous_summary": compact_json(previous) if previous else "(none)",
            "turns": "\n".join(f"{t['role']}: {t['content']}" for t in turns),
        }
        request = AssemblyRequest("AGT-001/summary", io.org_id, io.turn_id, org, task=task)
        result = call_agent(deps.llm, request)
        assert result.output is not None
        summary, text = history.fit_summary(
            result.output.model_dump(mode="json"), deps.llm.counter.count
        )
        gone = [r.id for r in folded] + ([old.id] if old else [])
        chat_store.delete_turns(cur, io.session_id, gone)
        io.add_rows(cur, [("summary", text, {"summary": summary})])
    io.rows = None  # the turn's copy of the history is stale now: read it again
    log.info("chat session %s: folded %d turns into its summary", io.session_id, len(folded))
    return len(folded)


def awaited(cur: Any, rows: Sequence[history.Row]) -> dict[str, str]:
    """The status of each approval item a paused call in ``rows`` waits on."""
    # By id: not the queue's newest N, which a long queue (one outbound message per
    # prospect) would push them out of.
    waiting = [a for r in rows if (a := r.awaiting)]
    if not waiting:
        return {}
    return approvals.statuses(cur, waiting)


def pending(statuses: Mapping[str, str]) -> set[str]:
    """The items still pending: the calls waiting on them are pinned, never folded."""
    return {item for item, status in statuses.items() if status == "pending"}
