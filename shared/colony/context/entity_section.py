"""The entity section of a prompt (SPEC §5): the call's entities and the lists the assembler
ranks and cuts, fitted to the section's budget.

The lists are the contact's ``signals`` (strongest first: ``colony.context.signals``), its
company's stored pages (``sources``, best first) and the ``thread`` of its sequence (what
the contact already got, oldest first: each earlier step's channel, subject, text and how it
fared; its row id stays out of the prompt, for the provenance). Each is rendered as an
entity of its own, after the caller's entities; the org's
``deal`` stage, when the call has one, is an entity too. All of it is data (a block each).

Over budget, what gives way, in this order:
  1. non-essential fields (raw enrichment HTML, full transcript text), for an agent that
     reads them while the budget allows (the others never see them);
  2. the weakest stored pages, all of them if need be;
  3. the weakest signals, never below one (a message references exactly one);
  4. the oldest steps of the thread, never below the newest one: a follow-up must know
     what it follows, and what was said matters more to it than a second signal.
What is left must fit, or the assembler raises ``ContextBudgetExceeded`` naming the section.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colony.context import signals as signal_view
from colony.context import untrusted
from colony.context.serialize import NON_ESSENTIAL, compact, dumps


@dataclass(frozen=True)
class EntitySection:
    """The rendered section and what it kept of each list."""

    text: str
    signals: list[dict[str, Any]]
    sources: list[dict[str, Any]]
    thread: list[dict[str, Any]]
    stripped: bool  # non-essential fields were stripped to fit


def block(entities: Mapping[str, Any], strip: frozenset[str], boundary: str) -> str:
    """``entities`` as the section's data blocks (empty: no section)."""
    if not entities:
        return ""
    lines = ["ENTITY DATA:"]
    lines += [
        untrusted.block(boundary, dumps(compact(value, strip=strip)), source="entity", name=name)
        for name, value in entities.items()
    ]
    return "\n".join(lines)


def fit(
    entities: Mapping[str, Any],
    *,
    signals: Sequence[Mapping[str, Any]] = (),
    sources: Sequence[Mapping[str, Any]] = (),
    thread: Sequence[Mapping[str, Any]] = (),
    keep_raw: bool,
    boundary: str,
    count: Callable[[str], int],
    budget: int,
) -> EntitySection:
    """The entity section within ``budget`` tokens if it can be made to fit (see the module
    docstring for what gives way); the caller checks what is left."""
    strip = frozenset() if keep_raw else NON_ESSENTIAL
    ranked = [signal_view.view(s) for s in signal_view.ranked(signals)]
    pages = [dict(s) for s in sources]
    steps = [dict(t) for t in thread]

    def render() -> str:
        # a step's row id is for the call's provenance, not for the model
        said = [{k: v for k, v in t.items() if k != "id"} for t in steps]
        lists = {"signals": ranked, "sources": pages, "thread": said}
        return block({**entities, **{k: v for k, v in lists.items() if v}}, strip, boundary)

    text = render()
    stripped = False
    if keep_raw and count(text) > budget:
        strip, stripped = NON_ESSENTIAL, True
        text = render()
    for kept, floor, cut in ((pages, 0, -1), (ranked, 1, -1), (steps, 1, 0)):
        while len(kept) > floor and count(text) > budget:
            kept.pop(cut)
            text = render()
    return EntitySection(text, ranked, pages, steps, stripped)
