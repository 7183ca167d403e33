"""AGT-001's rolling window over ``chat_turns`` (seed §4.2 step 2, §6.3).

A session's history is its turns in order, led by at most one ``summary`` row. When the
history's tokens (the target model's tokenizer) exceed AGT-001's history budget, the oldest
turns are folded into that summary in one transaction (``compaction`` runs it; this module
only plans, with no I/O but ``load``):

* the unit of compaction is a *unit*: a user or answer row alone, or a tool call together
  with every row that carries the same call id (its result, or its approval pause and the
  later result), so a call is never separated from its result;
* a unit whose tool call still waits on a pending approval item is pinned, and so is every
  row of the turn in progress;
* compaction keeps the newest units within half the budget, leaving room for the summary, so
  it runs once in a while rather than on every turn; the previous summary is folded into the
  new one, which replaces it: there is never more than one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colony.ports import Message, ToolCall
from colony.store import chat as chat_store

AGENT = "AGT-001"  # whose history budget sizes the window
SUMMARY_HEADER = "CONVERSATION SUMMARY (older turns, compacted):"
SUMMARY_MAX_TOKENS = 300  # seed §6.3
KEEP_FRACTION = 0.5


@dataclass(frozen=True)
class Row:
    """One stored turn of a session (``chat_turns``)."""

    id: int
    role: str
    content: str
    tool_call: Mapping[str, Any] | None
    turn_id: str | None

    @property
    def call_id(self) -> str | None:
        if self.tool_call and self.role in ("assistant", "tool"):
            value = self.tool_call.get("id")
            return str(value) if value else None
        return None

    @property
    def awaiting(self) -> str | None:
        """The approval item this row waits on, if it is a paused tool call."""
        if self.role == "tool" and self.tool_call and self.tool_call.get("status") == "awaiting":
            return str(self.tool_call.get("approval_id"))
        return None


def load(cur: Any, session_id: str) -> list[Row]:
    """The session's history rows, in order."""
    return [
        Row(int(r["id"]), r["role"], r["content"], r["tool_call"], r["turn_id"])
        for r in chat_store.turns(cur, session_id)
    ]


def to_message(row: Row, decided: Mapping[str, str]) -> Message:
    """The row as the model sees it: a call as the assistant's tool call, its result (or its
    pause) as the tool's answer to it, the summary as our own assistant text (the assembler
    puts results and the summary in data blocks). A paused call whose item was since rejected
    says so."""
    content = row.content
    approval = row.awaiting
    if approval and decided.get(approval) == "rejected":
        content = f"{content} (a person rejected approval item {approval}; it did not run)"
    call = row.tool_call or {}
    ref = str(row.id)  # the row's id: the call's provenance names the turns it was shown
    if row.role == "summary":
        return Message("assistant", content, name="summary", id=ref)
    if row.role == "assistant" and row.call_id:
        arguments = call.get("arguments")
        tool_call = ToolCall(
            str(call.get("name") or ""),
            dict(arguments) if isinstance(arguments, Mapping) else {},
            id=row.call_id,
        )
        return Message("assistant", content, tool_calls=(tool_call,), id=ref)
    if row.role == "tool":
        name = str(call["name"]) if call.get("name") else None
        return Message("tool", content, tool_call_id=row.call_id, name=name, id=ref)
    return Message("assistant" if row.role == "assistant" else "user", content, id=ref)


def tokens(rows: Sequence[Row], count: Callable[[str], int]) -> int:
    return sum(count(r.content) for r in rows)


def plan(
    rows: Sequence[Row],
    *,
    budget: int,
    count: Callable[[str], int],
    pending: set[str],
    current_turn: str | None,
) -> list[Row] | None:
    """The rows to fold into the summary, or None when the history fits its budget."""
    if budget <= 0 or tokens(rows, count) <= budget:
        return None
    units: dict[str, list[Row]] = {}
    for row in rows:
        if row.role == "summary":
            continue
        units.setdefault(row.call_id or f"row:{row.id}", []).append(row)
    ordered = sorted(units.values(), key=lambda unit: unit[0].id)

    def pinned(unit: list[Row]) -> bool:
        return any(
            (
                r.awaiting in pending
                and not any(x.tool_call and x.tool_call.get("status") == "result" for x in unit)
            )
            or (current_turn is not None and r.turn_id == current_turn)
            for r in unit
        )

    keep = int(budget * KEEP_FRACTION)
    remaining = sum(count(r.content) for unit in ordered for r in unit)
    chosen: list[Row] = []
    for unit in ordered:
        if remaining <= keep:
            break
        if pinned(unit):
            continue
        chosen.extend(unit)
        remaining -= sum(count(r.content) for r in unit)
    return sorted(chosen, key=lambda r: r.id) or None


def previous_summary(rows: Sequence[Row]) -> tuple[Row | None, dict[str, Any] | None]:
    for row in rows:
        if row.role == "summary":
            data = (row.tool_call or {}).get("summary")
            return row, dict(data) if isinstance(data, Mapping) else None
    return None, None


def render_summary(summary: Mapping[str, Sequence[str]]) -> str:
    lines = [SUMMARY_HEADER]
    labels = (
        ("decisions", "Decisions"),
        ("entity_ids", "Entities"),
        ("pending_items", "Pending"),
        ("user_preferences", "Preferences"),
    )
    for key, label in labels:
        items = [str(i) for i in summary.get(key) or ()]
        if items:
            lines.append(f"{label}: " + "; ".join(items))
    if len(lines) == 1:
        lines.append("(nothing to carry over)")
    return "\n".join(lines)


def fit_summary(
    summary: Mapping[str, Sequence[str]],
    count: Callable[[str], int],
    limit: int = SUMMARY_MAX_TOKENS,
) -> tuple[dict[str, list[str]], str]:
    """The summary cut to ``limit`` tokens as rendered (whatever the model returned): the
    oldest item of the longest list goes first. Returns it and its rendering."""
    kept = {k: [str(i) for i in v] for k, v in summary.items() if isinstance(v, list | tuple)}
    text = render_summary(kept)
    while count(text) > limit and any(kept.values()):
        longest = max(kept, key=lambda k: sum(len(i) for i in kept[k]))
        kept[longest].pop(0)
        text = render_summary(kept)
    return kept, text


def transcript(rows: Sequence[Row]) -> list[dict[str, str]]:
    """The folded rows as the summariser reads them (role + content)."""
    return [{"role": r.role, "content": r.content} for r in rows]
