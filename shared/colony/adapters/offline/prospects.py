"""Offline answers about a prospect: ``qualification_score`` and ``prospect_enrichment``.

Both read only the rendered prompt (``colony.adapters.offline.prompt``), as a model would:

- ``qualification_score``: the ``contact`` entity and its ``signals`` entity (the stored
  signals; without one, the contact's own list), the ``icp_rubric`` entity, the
  anti-ICP conditions in the system message and "Today is YYYY-MM-DD" in the task. A
  prompt without the contact, the rubric or the date raises
  ``ValidationFailed`` naming what is missing. Anti-ICP matches
  (``colony.policy.anti_icp``) give total 0, all dimensions 0, the rule ids as
  ``disqualifiers`` and ``disqualify``; the reasoning quotes the condition, since the prompt
  carries conditions, not the admins' prose reasons. Otherwise the rubric is applied as
  written: size = the highest ``bands`` entry whose ``min_employees``
  ``enrichment.employee_count`` meets; vertical = ``points`` for ``preferred``,
  ``adjacent_points`` for ``adjacent``; tech_stack = ``points_per_match`` per distinct
  ``enrichment.tech_stack`` entry in ``preferred``; signals = ``points_per_signal`` per
  contact signal whose type is in ``types``; timing = ``points_recent`` when the freshest
  signal is at most ``recent_signal_days`` before today, ``points_older`` when older (or
  undated), ``points_none`` without signals. Every dimension is capped at its ``weight``.
  Only a score is proposed, with no recommendation: ``colony.policy.tiering`` decides the
  tier and outcome from the org's bands, which the prompt does not carry.
- ``prospect_enrichment``: the ``contact`` entity and, when research stored pages of its
  company, the ``sources`` entity (``colony.adapters.offline.research``). The summary
  restates the contact's own fields (name, title, company, enrichment) and what the pages
  state; ``signals`` are the contact's existing signals (type + detail) of a known type,
  each with its provenance (the detail as its quote, ``signals[i]`` as its source,
  confidence 0.9 when dated and 0.6 when not), then the signals quoted from the sources;
  ``facts`` are the firmographics the sources state; ``persona`` maps the title to a KC-03
  persona or is null.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from colony.adapters.offline.common import (
    as_number,
    clip,
    contact_signals,
    flatten,
    humanise,
    known_signals,
    opt_str,
    parse_date,
    require_mapping,
    signal_date,
)
from colony.adapters.offline.prompt import Prompt, PromptLacks
from colony.adapters.offline.research import read_sources
from colony.errors import ValidationFailed
from colony.policy.anti_icp import match_rules

PROSPECT_SIGNAL_TYPES = (
    "expansion",
    "hiring",
    "leadership_change",
    "funding",
    "lease_expiry",
    "consolidation",
    "tech_adoption",
)

# -- qualification_score -----------------------------------------------------------------------

_DIMENSIONS = ("size", "vertical", "tech_stack", "signals", "timing")


def _dimension(rubric: Mapping[str, Any], name: str) -> tuple[Mapping[str, Any], int]:
    spec = require_mapping(rubric, name, "icp_rubric")
    weight = as_number(spec.get("weight"))
    if weight is None or weight < 0:
        raise ValidationFailed(f"icp_rubric.{name}.weight is missing")
    return spec, min(int(weight), 100)


def _points(spec: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    value = as_number(spec.get(key))
    return default if value is None else value


def _casefolded(values: Any) -> set[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        return set()
    return {v.strip().casefold() for v in values if isinstance(v, str)}


def _score_dimensions(
    contact: Mapping[str, Any],
    rubric: Mapping[str, Any],
    today: date,
    known: list[Mapping[str, Any]],
) -> dict[str, tuple[int, int]]:
    """Dimension name -> (points, weight), each capped at its weight."""
    enrichment = contact.get("enrichment")
    enrichment = enrichment if isinstance(enrichment, Mapping) else {}
    scores: dict[str, tuple[int, int]] = {}

    spec, weight = _dimension(rubric, "size")
    employees = as_number(enrichment.get("employee_count"))
    size = 0.0
    if employees is not None:
        bands = [b for b in spec.get("bands") or [] if isinstance(b, Mapping)]
        for band in sorted(bands, key=lambda b: -_points(b, "min_employees")):
            if employees >= _points(band, "min_employees"):
                size = _points(band, "points")
                break
    scores["size"] = (min(int(size), weight), weight)

    spec, weight = _dimension(rubric, "vertical")
    vertical = enrichment.get("vertical")
    vertical = vertical.strip().casefold() if isinstance(vertical, str) else ""
    points = 0.0
    if vertical and vertical in _casefolded(spec.get("preferred")):
        points = _points(spec, "points", weight)
    elif vertical and vertical in _casefolded(spec.get("adjacent")):
        points = _points(spec, "adjacent_points")
    scores["vertical"] = (min(int(points), weight), weight)

    spec, weight = _dimension(rubric, "tech_stack")
    matches = _casefolded(enrichment.get("tech_stack")) & _casefolded(spec.get("preferred"))
    scores["tech_stack"] = (
        min(int(len(matches) * _points(spec, "points_per_match")), weight),
        weight,
    )

    spec, weight = _dimension(rubric, "signals")
    types = _casefolded(spec.get("types"))
    signals = [
        s
        for s in known
        if not types or (isinstance(s.get("type"), str) and s["type"].casefold() in types)
    ]
    scores["signals"] = (
        min(int(len(signals) * _points(spec, "points_per_signal")), weight),
        weight,
    )

    spec, weight = _dimension(rubric, "timing")
    if not signals:
        points = _points(spec, "points_none")
    else:
        dates = [d for d in (signal_date(s) for s in signals) if d is not None]
        recent_days = _points(spec, "recent_signal_days", 90)
        if dates and (today - max(dates)).days <= recent_days:
            points = _points(spec, "points_recent")
        else:
            points = _points(spec, "points_older")
    scores["timing"] = (min(int(points), weight), weight)
    return scores


_TODAY = re.compile(r"\bToday is (\d{4}-\d{2}-\d{2})\b")


def _object(prompt: Prompt, name: str) -> Mapping[str, Any]:
    value = prompt.entity(name)
    if not isinstance(value, Mapping) or not value:
        raise ValidationFailed(f"the {name} entity must be a non-empty object")
    return value


def qualification_score(prompt: Prompt) -> dict[str, Any]:
    """The rubric applied as written, after the anti-ICP filter."""
    contact = _object(prompt, "contact")
    rubric = _object(prompt, "icp_rubric")
    stated = _TODAY.search(prompt.task)
    today = parse_date(stated.group(1)) if stated else None
    if today is None:
        raise ValidationFailed("the task states no date (Today is YYYY-MM-DD)")
    matches = match_rules(contact, prompt.anti_icp_rules)
    if matches:
        ids = [m.rule_id for m in matches]
        reasoning = f"Disqualified by the anti-ICP filter ({', '.join(ids)}): {matches[0].reason}"
        return {
            "total_score": 0,
            "dimension_scores": dict.fromkeys(_DIMENSIONS, 0),
            "disqualifiers": ids,
            "recommendation": "disqualify",
            "reasoning": clip(flatten(reasoning) + ".", 400),
        }
    known = known_signals(prompt.optional_entity("signals"), contact)
    scores = _score_dimensions(contact, rubric, today, known)
    total = min(sum(points for points, _ in scores.values()), 100)
    ranked = sorted(
        _DIMENSIONS,
        key=lambda d: (-(scores[d][0] / scores[d][1] if scores[d][1] else 0), -scores[d][0]),
    )

    def label(d: str) -> str:
        return f"{humanise(d)} ({scores[d][0]}/{scores[d][1]})"

    first = f"Scored {total}/100, led by {label(ranked[0])}"
    first += f" and {label(ranked[1])}."
    weakest = ranked[-1]
    second = (
        f"Weakest dimension: {label(weakest)}."
        if scores[weakest][0] < scores[weakest][1]
        else "Every dimension scored its full weight."
    )
    return {
        "total_score": total,
        "dimension_scores": {d: scores[d][0] for d in _DIMENSIONS},
        "disqualifiers": [],
        "reasoning": clip(f"{first} {second}", 400),
    }


# -- prospect_enrichment -----------------------------------------------------------------------

_PERSONAS = (
    (re.compile(r"\b(?:chief financial officer|cfo)\b", re.I), "CFO"),
    (re.compile(r"\b(?:chief operating officer|coo)\b", re.I), "COO"),
    (re.compile(r"\breal estate\b", re.I), "VP Real Estate"),
    (re.compile(r"\bambulatory\b", re.I), "VP Ambulatory Operations"),
    (re.compile(r"\b(?:facilities|space planning)\b", re.I), "Director of Facilities"),
)


def _persona(title: str | None) -> str | None:
    if not title:
        return None
    return next((persona for pattern, persona in _PERSONAS if pattern.search(title)), None)


def prospect_enrichment(prompt: Prompt) -> dict[str, Any]:
    """A summary restating the contact's own fields, its known signals, a persona."""
    contact = _object(prompt, "contact")
    enrichment = contact.get("enrichment")
    enrichment = enrichment if isinstance(enrichment, Mapping) else {}
    name, title, company = (opt_str(contact, k) for k in ("name", "title", "company"))
    read = read_sources(
        prompt.optional_entity("sources"),
        parse_date(prompt.value("today")),
        prompt.value("icp_vocabulary"),
    )
    if not enrichment and not company:
        raise PromptLacks("contact.enrichment")
    sentences: list[str] = []
    who = ", ".join(p for p in (name, title) if p)
    if who or company:
        sentences.append(f"{who or 'Contact'}{f' at {company}' if company else ''}.")
    facts: list[str] = []
    vertical = opt_str(enrichment, "vertical")
    sub_vertical = opt_str(enrichment, "sub_vertical")
    if vertical:
        facts.append(
            f"a {humanise(vertical)}" + (f" ({humanise(sub_vertical)})" if sub_vertical else "")
        )
    employees = as_number(enrichment.get("employee_count"))
    if employees is not None:
        facts.append(f"{int(employees):,} employees")
    facilities = as_number(enrichment.get("facilities_count"))
    if facilities is not None:
        facts.append(f"{int(facilities)} facilities")
    where = ", ".join(
        p for p in (opt_str(enrichment, "region"), opt_str(enrichment, "country")) if p
    )
    if facts or where:
        subject = company or "The organization"
        sentences.append(
            f"{subject}: {', '.join(facts) if facts else 'no size data'}"
            + (f", in {where}" if where else "")
            + "."
        )
    stack = enrichment.get("tech_stack")
    if isinstance(stack, list) and stack:
        sentences.append(f"Tech stack: {', '.join(str(s) for s in stack)}.")
    for key in ("ownership", "status"):
        value = opt_str(enrichment, key)
        if value:
            sentences.append(f"{key.capitalize()}: {humanise(value)}.")
    news = opt_str(enrichment, "recent_news")
    if news:
        sentences.append(f"Recent news: {news}")
    summary = ""
    for sentence in sentences:
        candidate = f"{summary} {sentence}".strip()
        if len(candidate) > 600:
            break
        summary = candidate
    signals = []
    for index, s in enumerate(contact_signals(contact)):
        detail = s.get("detail")
        if s.get("type") not in PROSPECT_SIGNAL_TYPES or not isinstance(detail, str):
            continue
        if not detail.strip():
            continue
        dated = parse_date(s.get("date"))
        signals.append(
            {
                "type": s["type"],
                "detail": clip(" ".join(detail.split()), 400),
                "quote": clip(detail.strip(), 400),
                "source": f"signals[{index}]",
                # A dated signal is a fact with a when; an undated one is weaker evidence.
                "confidence": 0.9 if dated else 0.6,
                "observed_on": dated.isoformat() if dated else None,
            }
        )
    researched = _researched(read["facts"], company)
    if researched and len(f"{summary} {researched}") <= 600:
        summary = f"{summary} {researched}".strip()
    return {
        "summary": summary or clip(sentences[0], 600),
        "signals": (signals + read["signals"])[:10],
        "persona": _persona(title),
        "facts": read["facts"],
    }


def _researched(facts: list[dict[str, Any]], company: str | None) -> str:
    """One sentence of what the company's pages state, or ''."""
    said = {f["field"]: f["value"] for f in facts if f["field"] != "tech_stack"}
    parts = [humanise(said["vertical"])] if "vertical" in said else []
    if "employee_count" in said:
        parts.append(f"about {int(said['employee_count']):,} employees")
    if "office_count" in said:
        parts.append(f"{said['office_count']} offices")
    return f"Its website: {company or 'the company'} is {', '.join(parts)}." if parts else ""
