"""Where one chat turn writes: its history rows and events, and who hears them as they happen.

A ``TurnIO`` is what the turn, its hydration, compaction and the approval resume share: the
org and session, the turn id, a transaction factory (its own short transactions for a live
turn, the approval decision's cursor for a resumed one) and the sink that relays events to
the client. It is separate so those modules depend on it, not on each other.

The answer streams: each delta of the model's text is handed to the sink the moment it
arrives (``stream_delta``) and stored with the turn's next write, ahead of that write's own
events, in one statement. A streamed delta carries the event id it is then stored under:
only the turn holding the session's lock appends to the session's log, so its next ids are
known (the last one it stored, plus one, and so on). A client that reconnects with the id of
a delta it saw replays from exactly there once the deltas are stored; a turn that fails
mid-answer stores what it streamed before its ``error`` and ``done``, so the ids it handed
out are the ones in the log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from colony.flows.chat import events as ev
from colony.flows.chat import history
from colony.flows.deps import FlowDeps
from colony.llm.partial_json import FieldText
from colony.observability.call_records import record_row, store_records
from colony.ports import LlmCallRecord

log = logging.getLogger("colony.chat")

Sink = Callable[[Sequence[ev.Event]], None]
Rows = Sequence[tuple[str, str, Mapping[str, Any] | None]]


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
    # A transaction opened for Knowledge Core searches too (``SEARCH_SETTINGS``): the first
    # model step reads and retrieves in it. None (a resumed turn, on the approval's cursor):
    # the retrieval takes a transaction of its own.
    search_tx: Callable[[], AbstractContextManager[Any]] | None = None
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    knowledge: list[Any] | None = None
    # What the detector flagged in the untrusted text of this turn's model calls: carried
    # onto any approval card the turn writes (``colony.context.untrusted``).
    untrusted: list[str] = field(default_factory=list)
    # The model call whose answer the turn is acting on (``hydration.model_step``): stored
    # on the assistant rows it wrote, so ``colony explain <turn id>`` follows the link.
    call_id: str | None = None
    last_seq: int | None = None  # the id of the last event this turn stored
    # The session's stored history as this turn knows it (loaded by its first model step,
    # extended by its own writes; None: read it again), and what else that step read.
    rows: list[history.Row] | None = None
    hydrated: Any = None
    answer: AnswerDeltas | None = field(default=None, init=False, repr=False)
    # The records of this turn's model calls (``deferred_records``), kept with its next write.
    records: list[LlmCallRecord] = field(default_factory=list, init=False, repr=False)
    # Events announced to the sink (or, before the turn's first event is stored, held),
    # stored with the next write; a write whose transaction rolls back keeps them here.
    _announced: list[tuple[ev.Event, bool]] = field(default_factory=list, init=False, repr=False)
    _settle: Any = field(default=None, init=False, repr=False)
    # A write held for the turn's next transaction (``write_soon``): events, then rows.
    _soon: tuple[list[tuple[str, dict[str, Any]]], list[Any]] = field(
        default_factory=lambda: ([], []), init=False, repr=False
    )

    def write_soon(self, items: Sequence[tuple[str, dict[str, Any]]], rows: Rows = ()) -> None:
        """Write ``items`` and ``rows`` with the turn's next transaction, ahead of anything it
        writes (the user's message and ``accepted`` go with the first model step's reads:
        one transaction, not two); delivered when that commits."""
        self._soon[0].extend(items)
        self._soon[1].extend(rows)

    @property
    def holding(self) -> bool:
        """Whether a ``write_soon`` waits for the next transaction."""
        return bool(self._soon[0] or self._soon[1])

    def stream_delta(self, text: str, *, reset: bool = False) -> None:
        """Hand a delta of the answer to the sink now; it is stored with the next write.
        ``reset``: the text shown so far in this turn is replaced by ``text``."""
        data: dict[str, Any] = {"text": text}
        if reset:
            data["reset"] = True
        self.announce([("delta", data)])

    def announce(self, items: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Hand ``items`` to the sink now, numbered as they will be stored: with the next
        write, ahead of its own events (see the module docstring)."""
        live = self.last_seq is not None
        for kind, data in items:
            seq = (self.last_seq or 0) + len(self._announced) + 1
            event = ev.Event(seq, self.turn_id, kind, {**data, "turn_id": self.turn_id})
            self._announced.append((event, live))
            if live and self.sink is not None:
                self.sink([event])

    def emit(
        self,
        cur: Any,
        items: Sequence[tuple[str, dict[str, Any]]],
        rows: Rows = (),
        *,
        gone: Sequence[int] = (),
    ) -> list[ev.Event]:
        """Store ``rows`` and the announced events, then ``items``, on ``cur`` in one
        statement (deleting the history rows ``gone``: what a compaction folded into the
        summary row among ``rows``); returns what ``deliver`` hands on once ``cur`` commits
        (the events not yet delivered)."""
        announced = list(self._announced)
        records = list(self.records)
        soon_items, soon_rows = self._soon
        everything = [*soon_items, *((e.type, e.data) for e, _ in announced), *items]
        rows = [r for r in (*soon_rows, *rows) if r is not None]
        ahead = len(soon_items)
        if everything or rows or gone:  # rows, events and the calls' records: one statement
            calls = [record_row(r) for r in records]
            stored, ids = ev.append_with_rows(
                cur,
                self.org_id,
                self.session_id,
                self.turn_id,
                everything,
                rows,
                calls,
                call_id=self.call_id,
                gone=gone,
            )
        else:
            store_records(cur, records)
            stored, ids = [], []
        if announced and stored[ahead].seq != announced[0][0].seq:
            log.warning(
                "chat turn %s: announced events were stored as %d.., announced as %d..",
                self.turn_id,
                stored[ahead].seq,
                announced[0][0].seq,
            )
        new_rows = [
            history.Row(i, r[0], r[1], r[2], self.turn_id) for i, r in zip(ids, rows, strict=True)
        ]
        last = stored[-1].seq if stored else self.last_seq
        self._settle = (
            len(announced),
            last,
            new_rows,
            len(records),
            len(soon_items),
            len(soon_rows),
            set(gone),
        )
        mine = stored[ahead : ahead + len(announced)]
        held = [e for e, (_, live) in zip(mine, announced, strict=True) if not live]
        return stored[:ahead] + held + stored[ahead + len(announced) :]

    def deliver(self, stored: Sequence[ev.Event]) -> None:
        """After the commit of an ``emit``: its events and rows are the log's; hand them on."""
        if self._settle is not None:
            done, self.last_seq, new_rows, recorded, soon_items, soon_rows, gone = self._settle
            del self._announced[:done]
            del self.records[:recorded]
            del self._soon[0][:soon_items]
            del self._soon[1][:soon_rows]
            if self.rows is not None:
                self.rows[:] = [r for r in self.rows if r.id not in gone] + new_rows
            self._settle = None
        if self.sink is not None and stored:
            self.sink(stored)

    def write(
        self,
        items: Sequence[tuple[str, dict[str, Any]]],
        rows: Rows = (),
        *,
        gone: Sequence[int] = (),
    ) -> list[ev.Event]:
        """Append turn rows and events together (deleting the rows ``gone``), then deliver
        the events."""
        with self.tx() as cur:
            stored = self.emit(cur, items, rows, gone=gone)
        self.deliver(stored)
        return stored


class AnswerDeltas:
    """The ``AnswerStream`` of one orchestrator call: the reply's ``answer`` text, decoded
    from the streaming JSON as it arrives, becomes the turn's ``delta`` events.

    A new attempt (a retry, a larger cap, the repair) streams from the start again: while its
    text repeats what was shown nothing is sent, once it goes past it only the rest is, and
    if it says something else the shown text is replaced (``reset``). ``closing`` makes the
    shown text the validated answer, whatever was streamed."""

    def __init__(self, io: TurnIO) -> None:
        self.io = io
        self.shown = ""
        self._reader = FieldText("answer")
        self._again: str | None = None  # a new attempt's text, while it repeats ``shown``

    def feed(self, fragment: str) -> None:
        text = self._reader.feed(fragment)
        if not text:
            return
        if self._again is None:
            self.shown += text
            self.io.stream_delta(text)
            return
        self._again += text
        if self.shown.startswith(self._again):
            return
        if self._again.startswith(self.shown):
            rest, self.shown, self._again = self._again[len(self.shown) :], self._again, None
            self.io.stream_delta(rest)
            return
        self.shown, self._again = self._again, None
        self.io.stream_delta(self.shown, reset=True)

    def restart(self) -> None:
        self._reader = FieldText("answer")
        self._again = "" if self.shown else None

    def closing(self, answer: str) -> list[tuple[str, dict[str, Any]]]:
        """The delta that makes the shown text ``answer``, if it is not already."""
        if self.shown == answer:
            return []
        if not self.shown:
            return [("delta", {"text": answer})]
        return [("delta", {"text": answer, "reset": True})]


def compact_json(value: Any) -> str:
    """JSON as history rows and summaries store it: compact, UTF-8 kept, anything else ``str``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
