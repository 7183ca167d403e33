"""A contact's signals as the assembler puts them in a prompt (issue 19 item 1; seed §7.3).

AGT-003's signals are stored per contact with their provenance (``colony.store.campaigns.signals``)
and reach AGT-004 and AGT-005 as the ``signals`` entity of their context. ``ranked`` orders
them strongest first: the highest confidence, then the most recent ``observed_on`` (an
undated signal after a dated one), then as given, so an entity section over its budget cuts
the weakest first. ``view`` is what the prompt shows of one: its type, detail, the quote it
rests on (only when it says more than the detail), where it was read, the confidence and the
day. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SHOWN = ("type", "detail", "quote", "source", "confidence", "observed_on")


def _confidence(signal: Mapping[str, Any]) -> float:
    value = signal.get("confidence")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _day(signal: Mapping[str, Any]) -> str:
    value = signal.get("observed_on") or signal.get("date")
    return str(value)[:10] if value else ""


def ranked(signals: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``signals`` strongest first (confidence, then recency; ties keep their order)."""
    # Two stable sorts: ISO days sort as text (newest first, undated last), then confidence.
    newest = sorted(signals, key=_day, reverse=True)
    return sorted(newest, key=lambda s: -_confidence(s))


def view(signal: Mapping[str, Any]) -> dict[str, Any]:
    """One signal as the prompt shows it (see the module docstring)."""
    shown = {k: signal.get(k) for k in SHOWN if signal.get(k) not in (None, "")}
    if "observed_on" not in shown and signal.get("date"):
        shown["observed_on"] = str(signal["date"])
    if shown.get("quote") == shown.get("detail"):
        shown.pop("quote", None)
    return shown


def reference(signal: Mapping[str, Any]) -> dict[str, Any]:
    """What a call's provenance records of a kept signal: where it was read, how sure, when."""
    return {k: v for k in ("source", "confidence", "observed_on") if (v := view(signal).get(k))}
