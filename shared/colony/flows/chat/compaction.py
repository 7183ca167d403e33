"""Rolling summaries (seed §6.3): fold a session's oldest turns into its one summary row.

``colony.flows.chat.history`` decides *what* to fold (pure: units, pins, the budget); this module
does it: asks AGT-001's summary profile for the new summary and swaps the folded rows for it.
A live turn holds its history (``TurnIO.rows``): ``fold_ahead`` plans from it when one of the
turn's writes (a tool result, the answer) or its next model call would take it over budget,
and the swap goes into that write's one statement, so a turn that compacts costs no more
round trips than one that does not. A resumed turn does not hold it: ``compact_if_needed``
reads the rows and the approval items that pin paused calls and swaps them in one
transaction of its own, after the turn's last write. Apart from hydration because it runs
from the turn's writes as well as before a model call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.contracts import IcpDefinition, OrgContext
from colony.contracts.outputs.documents import ConversationSummary
from colony.flows.chat import history
from colony.flows.chat.history import AGENT
from colony.flows.chat.turn_io import Rows, TurnIO, compact_json
from colony.llm.agent_call import call_agent
from colony.observability.call_records import deferred_records
from colony.store import orgdata
from colony.store.approvals import approvals

log = logging.getLogger("colony.chat")


@dataclass(frozen=True)
class Fold:
    """A compaction, ready to store: the history rows to delete (the folded ones and the old
    summary) and the rows to add (the new summary, after the turn's own rows not folded)."""

    gone: list[int]
    rows: list[tuple[str, str, Mapping[str, Any] | None]]
    folded: int


def compact_if_needed(io: TurnIO, *, current_turn: str | None) -> int:
    """Fold the oldest turns into the one summary row when over budget; returns rows folded.

    Runs in one transaction: the folded rows and the old summary go, the new summary comes,
    or nothing changes.
    """
    with io.tx() as cur:
        rows = history.load(cur, io.session_id)
        icp = orgdata.active_icp(cur)
        org = OrgContext(org_name=orgdata.org_name(cur), icp=IcpDefinition(**icp) if icp else None)
        fold = _summarise(io, rows, pending(awaited(cur, rows)), org, current_turn=current_turn)
        if fold is None:
            return 0
        stored = io.emit(cur, [], fold.rows, gone=fold.gone)
    io.deliver(stored)
    io.rows = None  # the turn's copy of the history is stale now: read it again
    log.info("chat session %s: folded %d turns into its summary", io.session_id, fold.folded)
    return fold.folded


def fold_ahead(io: TurnIO, new: Rows, *, current_turn: str | None) -> Fold | None:
    """The compaction the turn's next write needs once it adds ``new`` (None: it needs none),
    planned from what the turn already holds, so it is stored with that write in its one
    statement (``TurnIO.emit``'s ``gone``) instead of in transactions of its own.

    The turn holds the session's lock, so ``io.rows`` is the stored history; the items its
    paused calls wait on, the ICP and the org's name are what its first step read
    (``io.hydrated``); an item paused by this turn is pending. ``new`` get ids after every
    stored row, so they are folded only as the oldest-first plan would fold them once stored
    (and then never stored); ``current_turn``'s rows are pinned. The summary call's record
    goes with that write too."""
    assert io.rows is not None and io.hydrated is not None
    seen = io.hydrated
    last = max((r.id for r in io.rows), default=0)
    ahead = [
        history.Row(last + 1 + i, role, content, call, io.turn_id)
        for i, (role, content, call) in enumerate(new)
    ]
    rows = [*io.rows, *ahead]
    waiting = {a for r in rows if (a := r.awaiting) and seen.decided.get(a, "pending") == "pending"}
    org = OrgContext(org_name=seen.org_name, icp=IcpDefinition(**seen.icp) if seen.icp else None)
    with deferred_records(io.records):
        fold = _summarise(io, rows, waiting, org, current_turn=current_turn)
    if fold is None:
        return None
    folded = {r.id for r in ahead if r.id in fold.gone}
    kept = [(r.role, r.content, r.tool_call) for r in ahead if r.id not in folded]
    log.info("chat session %s: folding %d turns into its summary", io.session_id, fold.folded)
    return Fold([i for i in fold.gone if i <= last], [*kept, *fold.rows], fold.folded)


def _summarise(
    io: TurnIO,
    rows: Sequence[history.Row],
    pinned: set[str],
    org: OrgContext,
    *,
    current_turn: str | None,
) -> Fold | None:
    """Plan the fold of ``rows`` and ask AGT-001's summary profile for the new summary."""
    deps = io.deps
    folded = history.plan(
        rows,
        budget=deps.llm.budgets.for_profile(AGENT).history,
        count=deps.llm.counter.count,
        pending=pinned,
        current_turn=current_turn,
    )
    if not folded:
        return None
    old, previous = history.previous_summary(rows)
    turns = history.transcript(folded)
    task = {
        "previous_summary": compact_json(previous) if previous else "(none)",
        "turns": "\n".join(f"{t['role']}: {t['content']}" for t in turns),
    }
    request = AssemblyRequest("AGT-001/summary", io.org_id, io.turn_id, org, task=task)
    result = call_agent(deps.llm, request)
    assert isinstance(result.output, ConversationSummary)
    summary, text = history.fit_summary(
        result.output.model_dump(mode="json"), deps.llm.counter.count
    )
    gone = [r.id for r in folded] + ([old.id] if old else [])
    return Fold(gone, [("summary", text, {"summary": summary})], len(folded))


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
