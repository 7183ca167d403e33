"""Offline AGT-003 on a company's stored pages (issue 33): signals and firmographic facts
quoted from the ``sources`` entity, as a careful model would read them.

Reads only the prompt: the ``sources`` entity (``[{ref, url, title, published, fetched,
text}]``, best first), the task's ``today`` and ``icp_vocabulary`` (the ICP's own labels
for ``vertical`` and ``tech_stack``). Each sentence of a passage is matched against a few
patterns per signal type; a match is reported with the sentence as its verbatim quote, the
passage's ref as its source and the passage's date as ``observed_on``. A passage from a
public job board (its URL names Greenhouse's, Lever's or Ashby's API) is a hiring signal in
itself, quoting the posting's first line. Facts: an employee count, an office count, the
first vocabulary vertical and every vocabulary tech the text names. Instructions a page
holds match no pattern: they are text, and nothing here acts on text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from colony.adapters.offline.common import clip, parse_date
from colony.policy.outbound import split_sentences

_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    kind: tuple(re.compile(p, re.IGNORECASE) for p in patterns)
    for kind, patterns in {
        "expansion": (
            r"\bopen(?:s|ed|ing)?\b.{0,60}\b(?:office|location|clinic|site|facilit|campus"
            r"|cent(?:er|re)|hospital|practice|branch|headquarters)",
            r"\bnew (?:office|location|clinic|facility|campus|headquarters|cent(?:er|re)"
            r"|hospital|practice|branch)\b",
            r"\bexpan(?:d|ds|ded|ding|sion)\b",
        ),
        "consolidation": (
            r"\bconsolidat\w*",
            r"\bmerg(?:e|es|ed|er)\b",
            r"\bacquir(?:e|es|ed|ing)\b|\bacquisition\b",
            r"\bmoved every (?:office|site|location)\b",
        ),
        "hiring": (r"\bhiring\b", r"\bjoin our team\b", r"\bopen (?:roles?|positions?)\b"),
        "leadership_change": (
            r"\bappoint(?:s|ed|ment)\b",
            r"\bnamed\b.{0,40}\b(?:chief|ceo|coo|cfo|president|director|vice president)\b",
        ),
        "funding": (r"\bfunding\b", r"\bseries [a-e]\b", r"\braise[sd]\b.{0,30}\$"),
        "tech_adoption": (
            r"\bselect(?:s|ed)\b.{0,60}\bplatform\b",
            r"\bimplement(?:s|ed|ing)\b",
            r"\bdeploy(?:s|ed|ing)\b",
        ),
        "lease_expiry": (r"\blease\b.{0,60}\b(?:expir|end|renew)\w*",),
    }.items()
}
_BOARDS = re.compile(r"//(?:boards-api\.greenhouse\.io|api\.lever\.co|api\.ashbyhq\.com)/")
_EMPLOYEES = re.compile(r"\b(\d{1,3}(?:,\d{3})+|\d{2,6})\s+(?:employees|staff|team members)\b")
_OFFICES = re.compile(r"\b(\d{1,4})\s+(?:offices|locations|clinics|practices|facilities)\b")
MAX_SIGNALS = 10
MIN_QUOTE_WORDS = 3


def read_sources(prompt_sources: Any, today: date | None, vocabulary: Any) -> dict[str, Any]:
    """Signals and facts from the sources entity (empty lists when there is none)."""
    sources = [s for s in prompt_sources or [] if isinstance(s, Mapping)]
    signals: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for source in sources:
        for kind, quote in _signals_in(source):
            if (kind, quote) in seen or len(signals) >= MAX_SIGNALS:
                continue
            seen.add((kind, quote))
            day = parse_date(source.get("published"))
            recent = day is not None and today is not None and (today - day).days <= 180
            signals.append(
                {
                    "type": kind,
                    "detail": clip(_detail(kind, quote, source), 400),
                    "quote": quote,
                    "source": str(source.get("ref") or ""),
                    "confidence": 0.9 if recent else 0.6,
                    "observed_on": day.isoformat() if day else None,
                }
            )
    return {"signals": signals, "facts": _facts(sources, vocabulary)}


def _detail(kind: str, quote: str, source: Mapping[str, Any]) -> str:
    """The signal in a sentence: a posting's quote is its listing line (title · date ·
    place), said as the opening it is."""
    if kind == "hiring" and _BOARDS.search(str(source.get("url") or "")):
        title, *rest = [p.strip() for p in quote.split("·")]
        where = rest[-1] if len(rest) >= 2 else None
        return f"Hiring a {title}" + (f" in {where}" if where else "") + "."
    return quote


def _sentences(text: str) -> list[str]:
    return [s for line in text.splitlines() for s in split_sentences(line) if s.strip()]


def _signals_in(source: Mapping[str, Any]) -> list[tuple[str, str]]:
    text = source.get("text")
    if not isinstance(text, str):
        return []
    if _BOARDS.search(str(source.get("url") or "")):
        first = text.strip().splitlines()[0].strip() if text.strip() else ""
        return [("hiring", clip(first, 400))] if len(first.split()) >= MIN_QUOTE_WORDS else []
    found = []
    for sentence in _sentences(text):
        if len(sentence.split()) < MIN_QUOTE_WORDS or len(sentence) > 400:
            continue
        for kind, patterns in _PATTERNS.items():
            if any(p.search(sentence) for p in patterns):
                found.append((kind, sentence.strip()))
                break
    return found


def _facts(sources: Sequence[Mapping[str, Any]], vocabulary: Any) -> list[dict[str, Any]]:
    vocab = vocabulary if isinstance(vocabulary, Mapping) else {}
    verticals = [v for v in vocab.get("vertical") or [] if isinstance(v, str)]
    techs = [t for t in vocab.get("tech_stack") or [] if isinstance(t, str)]
    facts: dict[tuple[str, str], dict[str, Any]] = {}

    def add(field: str, value: str, quote: str, ref: str) -> None:
        if field != "tech_stack" and any(f == field for f, _ in facts):
            return  # one count, one vertical: the best-ranked source's
        facts.setdefault(
            (field, value), {"field": field, "value": value, "quote": quote, "source": ref}
        )

    for source in sources:
        ref, text = str(source.get("ref") or ""), source.get("text")
        if not isinstance(text, str) or _BOARDS.search(str(source.get("url") or "")):
            continue
        for sentence in _sentences(text):
            if len(sentence.split()) < MIN_QUOTE_WORDS or len(sentence) > 300:
                continue
            quote = sentence.strip()
            if found := _EMPLOYEES.search(sentence):
                add("employee_count", found.group(1).replace(",", ""), quote, ref)
            if found := _OFFICES.search(sentence):
                add("office_count", found.group(1), quote, ref)
            lowered = sentence.casefold()
            for label in verticals:
                if re.search(rf"\b{re.escape(label.replace('_', ' ').casefold())}s?\b", lowered):
                    add("vertical", label, quote, ref)
                    break
            for tech in techs:
                if re.search(rf"\b{re.escape(tech.casefold())}\b", lowered):
                    add("tech_stack", tech, quote, ref)
    return list(facts.values())[:6]
