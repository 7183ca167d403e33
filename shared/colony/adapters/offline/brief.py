"""Offline ``daily_brief`` (AGT-010): five short sections with the snapshot's numbers copied.

It reads only the rendered prompt (``colony.adapters.offline.prompt``): the
``data_snapshot`` entity (``deals_by_stage``, ``approval_queue_count``, ``messages_sent``,
``content_published``, ``circuit_breaker``, ``bounce_rate``, ``reply_rate``, optionally the
replies counts) and yesterday's brief, the ``summary`` block of the history (``Yesterday's
brief (date): …`` or ``… none on record``). A ``deals_by_stage`` absent from the entity
reads as no deals, since the serialiser drops empty objects. Five sections, numbers copied
from the snapshot (a rate in [0, 1] is shown as a percentage followed by the raw value), and
with a prior brief one continuity clause comparing a number parsed from it (bounce rate,
approval queue or messages sent), or a generic reference when none parses. A missing or
negative number raises ``ValidationFailed`` naming it: a brief must never invent a figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from colony.adapters.offline.common import as_number, humanise, require_text
from colony.adapters.offline.prompt import Prompt
from colony.errors import ValidationFailed

DEAL_STAGES = ("discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost")

_QUIET_BREAKER = {"closed", "ok", "normal", "healthy", "armed", "clear"}


def _count(snapshot: Mapping[str, Any], key: str) -> int:
    value = snapshot.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationFailed(f"snapshot.{key} must be a non-negative integer")
    return value


def _rate(snapshot: Mapping[str, Any], key: str) -> float:
    value = as_number(snapshot.get(key))
    if value is None or value < 0:
        raise ValidationFailed(f"snapshot.{key} must be a non-negative number")
    return value


def _percent(rate: float) -> float:
    """A rate as a percentage: values in [0, 1] are fractions, larger ones already percent."""
    return rate * 100 if rate <= 1 else rate


def _show_rate(rate: float) -> str:
    shown = f"{_percent(rate):.2f}".rstrip("0").rstrip(".")
    return f"{shown}% ({rate:g})" if rate <= 1 else f"{shown}%"


def _prior_number(prior: str, pattern: str) -> float | None:
    match = re.search(pattern, prior, re.IGNORECASE)
    if not match:
        return None
    try:
        value = float(match.group(1).replace(",", ""))
    except ValueError:
        return None
    if len(match.groups()) > 1 and match.group(2) != "%" and value <= 1:
        return value * 100  # a fraction in the prior brief
    return value


def _direction(now: float, before: float) -> str:
    return "up" if now > before else "down" if now < before else "unchanged"


def _continuity(prior: str, bounce: float, queue: int, sent: int) -> str:
    before = _prior_number(prior, r"bounce rate[^0-9]{0,20}(\d+(?:\.\d+)?)\s*(%)?")
    if before is not None:
        now = _percent(bounce)
        shown = f"{before:.2f}".rstrip("0").rstrip(".")
        word = _direction(now, before)
        if word == "unchanged":
            return f"Versus the prior brief, bounce rate is unchanged at {shown}%."
        return f"Versus the prior brief, bounce rate is {word} from {shown}%."
    for pattern, now_int, label in (
        (
            r"(\d[\d,]*) (?:items? )?(?:awaiting|pending|in the approval queue)",
            queue,
            "approval queue",
        ),
        (r"(\d[\d,]*) messages? sent", sent, "messages sent"),
    ):
        value = _prior_number(prior, pattern)
        if value is not None:
            word = _direction(now_int, value)
            if word == "unchanged":
                return f"Versus the prior brief, {label} is unchanged at {int(value)}."
            return f"Versus the prior brief, {label} is {word} from {int(value)}."
    return "Continues from the prior brief, whose figures could not be compared."


_PRIOR = re.compile(r"\AYesterday's brief(?: \([^)]*\))?: (.*)\Z", re.DOTALL)


def _prior_brief(prompt: Prompt) -> str | None:
    """Yesterday's brief from the history's summary block, or None when there is none."""
    for block in prompt.blocks:
        match = _PRIOR.match(block.text.strip()) if block.source == "summary" else None
        if match:
            text = match.group(1).strip()
            return None if text.rstrip(".") == "none on record" else text
    return None


def daily_brief(prompt: Prompt) -> dict[str, Any]:
    """Five sections with the snapshot's numbers, plus continuity with the prior brief."""
    snapshot = prompt.entity("data_snapshot")
    if not isinstance(snapshot, Mapping):
        raise ValidationFailed("the data_snapshot entity must be an object")
    stages = snapshot.get("deals_by_stage", {})
    if not isinstance(stages, Mapping):
        raise ValidationFailed("snapshot.deals_by_stage must be an object")
    for stage, count in stages.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationFailed(f"snapshot.deals_by_stage.{stage} must be a count")
    queue = _count(snapshot, "approval_queue_count")
    sent = _count(snapshot, "messages_sent")
    published = _count(snapshot, "content_published")
    bounce = _rate(snapshot, "bounce_rate")
    reply = _rate(snapshot, "reply_rate")
    breaker = require_text(snapshot, "circuit_breaker", "snapshot")
    prior = _prior_brief(prompt)

    order = {stage: i for i, stage in enumerate(DEAL_STAGES)}
    ordered = sorted(stages, key=lambda s: (order.get(s, len(order)), s))
    open_total = sum(int(stages[s]) for s in ordered if not str(s).startswith("closed"))
    listed = ", ".join(f"{humanise(str(s))} {stages[s]}" for s in ordered) or "no deals"
    pipeline = f"{open_total} open deals; by stage: {listed}."

    breaker_quiet = breaker.strip().casefold() in _QUIET_BREAKER
    alerts = (
        f"Circuit breaker {breaker}; bounce rate {_show_rate(bounce)}."
        if breaker_quiet
        else f"Circuit breaker is {breaker}: a campaign is paused; bounce rate "
        f"{_show_rate(bounce)}."
    )
    queue_text = (
        f"{queue} item{'s' if queue != 1 else ''} awaiting approval."
        if queue
        else "0 items awaiting approval; the queue is clear."
    )
    yesterday = (
        f"{sent} messages sent, {published} content pieces published, reply rate "
        f"{_show_rate(reply)}."
    )
    if "replies_received" in snapshot:
        got = _count(snapshot, "replies_received")
        good, bad = _count(snapshot, "replies_positive"), _count(snapshot, "replies_negative")
        yesterday += f" {got} repl{'y' if got == 1 else 'ies'} ({good} positive, {bad} negative)."
    if prior and prior.strip():
        yesterday += " " + _continuity(prior, bounce, queue, sent)
    priorities: list[str] = []
    if not breaker_quiet:
        priorities.append(f"review the campaign behind the {breaker} circuit breaker")
    if queue:
        priorities.append(f"clear the {queue} approval items")
    late = [s for s in ("negotiation", "proposal") if int(stages.get(s, 0) or 0)]
    if late:
        priorities.append(
            "advance the " + " and ".join(f"{stages[s]} {s}" for s in late) + " deals"
        )
    if not priorities:
        priorities.append("keep sequences moving and watch reply rate")
    todays = "; ".join(priorities)
    todays = todays[0].upper() + todays[1:] + "."
    return {
        "pipeline": pipeline,
        "alerts": alerts,
        "queue": queue_text,
        "yesterday": yesterday,
        "todays_priorities": todays,
    }
