"""Numbers in text, and whether an answer's numbers are ones its inputs state.

A number is read with its thousands separators, decimals and a ``K``/``M`` suffix
(``$300K``, ``3.1M``, ``14,200``, ``12.5%``); each has its forms (``300K`` is 300 and
300,000), and an answer's number is grounded when any of its forms is a form of a number the
grounding states. Numbers up to ``FREE`` are not checked: they number steps, weeks and list
items ("Step 1", "3 sentences"), not facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

FREE = 10
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?([KkMm](?![a-z]))?")


def _canon(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".")


def forms(text: str) -> list[set[str]]:
    """Each number in ``text`` as the set of its canonical forms."""
    found = []
    for match in _NUMBER.finditer(text):
        whole, decimals, suffix = match.groups()
        value = float(whole.replace(",", "") + (decimals or ""))
        values = {value}
        if suffix:
            values.add(value * (1000 if suffix in "Kk" else 1_000_000))
        found.append({_canon(v) for v in values})
    return found


def stated(texts: Iterable[str]) -> set[str]:
    """Every form of every number in ``texts``."""
    out: set[str] = set()
    for text in texts:
        for number in forms(text):
            out |= number
    return out


def ungrounded(answer: str, grounding: set[str]) -> list[str]:
    """The numbers of ``answer`` (as written) that no form of the grounding states."""
    out = []
    for match, number in zip(_NUMBER.finditer(answer), forms(answer), strict=True):
        if all(float(f) <= FREE for f in number):  # "Step 3"; not "$4.2M"
            continue
        if not number & grounding:
            out.append(match.group(0).strip())
    return out


def snapshot_numbers(snapshot: Mapping[str, Any]) -> set[str]:
    """What a brief may state of its SQL snapshot: every count, the deals' totals (all,
    open, closed), each rate as a share and a percentage (to 0, 1 or 2 places), and the
    numbers its texts hold (the breaker's "open (2 campaigns paused)")."""
    values: set[float] = set()
    stages = snapshot.get("deals_by_stage") or {}
    counts = {str(k): int(v) for k, v in stages.items()}
    values |= set(counts.values())
    values.add(sum(counts.values()))
    values.add(sum(v for k, v in counts.items() if not k.startswith("closed")))
    values.add(sum(v for k, v in counts.items() if k.startswith("closed")))
    texts = []
    for key, value in snapshot.items():
        if key == "deals_by_stage":
            continue
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            values.add(value)
        elif isinstance(value, float):
            values.add(value)
            for places in (0, 1, 2):
                values.add(round(value * 100, places))
        elif isinstance(value, str):
            texts.append(value)
    return {_canon(float(v)) for v in values} | stated(texts)
