"""Where one chat turn writes: its history rows and events, and who hears them as they happen.

A ``TurnIO`` is what the turn, its hydration, compaction and the approval resume share: the
org and session, the turn id, a transaction factory (its own short transactions for a live
turn, the approval decision's cursor for a resumed one) and the sink that relays events to
the client. It is separate so those modules depend on it, not on each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from colony.flows.chat import events as ev
from colony.flows.deps import FlowDeps
from colony.store import chat as chat_store

AGENT = "AGT-001"

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
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    knowledge: list[Any] | None = None
    # What the detector flagged in the untrusted text of this turn's model calls: carried
    # onto any approval card the turn writes (``colony.context.untrusted``).
    untrusted: list[str] = field(default_factory=list)
    # The model call whose answer the turn is acting on (``hydration.model_step``): stored
    # on the assistant rows it wrote, so ``colony explain <turn id>`` follows the link.
    call_id: str | None = None

    def emit(self, cur: Any, items: Sequence[tuple[str, dict[str, Any]]]) -> list[ev.Event]:
        stored = ev.append(cur, self.org_id, self.session_id, self.turn_id, items)
        return stored

    def deliver(self, stored: Sequence[ev.Event]) -> None:
        if self.sink is not None and stored:
            self.sink(stored)

    def add_rows(self, cur: Any, rows: Rows) -> None:
        """Append this turn's history rows on ``cur``."""
        for role, content, call in rows:
            made_by = self.call_id if role == "assistant" else None
            chat_store.add_turn(
                cur, self.org_id, self.session_id, self.turn_id, role, content, call, made_by
            )

    def write(
        self,
        items: Sequence[tuple[str, dict[str, Any]]],
        rows: Rows = (),
    ) -> list[ev.Event]:
        """Append turn rows and events together, then deliver the events."""
        with self.tx() as cur:
            self.add_rows(cur, rows)
            stored = self.emit(cur, items)
        self.deliver(stored)
        return stored


def compact_json(value: Any) -> str:
    """JSON as history rows and summaries store it: compact, UTF-8 kept, anything else ``str``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
