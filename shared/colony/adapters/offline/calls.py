"""Offline answers about a recorded call: ``call_signals``, ``call_summary``, ``follow_up_draft``.

Each reads only the rendered prompt (``colony.adapters.offline.prompt``); a prompt without a
block the answer needs raises ``ValidationFailed`` naming it.

- ``call_signals``: the ``chunk`` block and the ``competitors`` block (AGT-006 pass 1).
  Pattern rules per signal type over the chunk's sentences (speaker lines only, when the
  chunk has ``[hh:mm:ss] Name:`` lines); every ``quote`` is a verbatim substring of the chunk
  as rendered; at most 4 per type (strongest first), reported in transcript order.
- ``call_summary``: the ``signals_json`` block (``[{type, quote, confidence}]``) and the
  ``deal`` entity when there is one (``name``, ``stage``, ``value``, ``next_action``).
  Three sentences: signal counts by type, the strongest budget / timeline / stakeholder
  quote, the strongest objection / competitor / gap quote (quotes flattened to one sentence);
  ``crm_updates.next_action`` from the strongest timeline signal, ``close_date`` only from a
  full date in a quote about signing or closing, ``deal_stage`` always null (a stage change
  needs a person); one KC-09 candidate per distinct objection.
- ``follow_up_draft``: the ``recording_summary`` block, the ``contact`` entity, the ``deal``
  entity (optional) and the KC blocks, whose titles are cited as references. A recap email
  signed by the ZoomProp team.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any, get_args

from colony.adapters.offline.common import (
    as_number,
    clip,
    first_name,
    flatten,
    humanise,
    one_sentence,
    opt_str,
    string_list,
)
from colony.adapters.offline.prompt import Prompt, PromptLacks
from colony.contracts.outputs.recordings import SignalType
from colony.errors import ProviderError, ValidationFailed
from colony.policy.outbound import (
    MAX_SUBJECT_WORDS,
    count_sentences,
    sentence_spans,
    split_sentences,
)

MAX_KC_UPDATES = 20  # CallSummary.kc_updates holds at most this many (its output cap)

SIGNAL_TYPES: tuple[str, ...] = get_args(SignalType)

# -- call_signals ------------------------------------------------------------------------------

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_I = re.IGNORECASE
_SIGNAL_PATTERNS: dict[str, list[tuple[re.Pattern[str], float]]] = {
    "budget_signals": [
        (re.compile(r"\bbudget(?:s|ed)?\b", _I), 0.9),
        (re.compile(r"\bfiscal\b", _I), 0.9),
        (re.compile(r"\$\s?\d"), 0.9),
        (re.compile(r"\bsigning authority\b", _I), 0.9),
        (re.compile(r"\bpenciled\b", _I), 0.85),
        (
            re.compile(r"\b(?:hundred|thousand|million)\b[^.?!]{0,40}\b(?:a year|per year)\b", _I),
            0.8,
        ),
        (re.compile(r"\bdollars?\b", _I), 0.7),
        (re.compile(r"\b(?:price|pricing|subscription)\b", _I), 0.7),
    ],
    "timeline_signals": [
        (re.compile(rf"\b(?:{_MONTHS})\s+(?:\d{{1,2}}(?:st|nd|rd|th)?|20\d\d)\b"), 0.9),
        (re.compile(r"\bgo(?:es)?[- ]live\b", _I), 0.9),
        (re.compile(r"\bby\s+(?:Q[1-4]|the end of)\b", _I), 0.9),
        (re.compile(r"\bboard meeting\b", _I), 0.9),
        (re.compile(r"\b(?:deadlines?|notice windows?)\b", _I), 0.85),
        (re.compile(r"\b20\d\d-\d\d-\d\d\b"), 0.9),
        (re.compile(r"\bQ[1-4]\b"), 0.8),
        (
            re.compile(rf"\b(?:in|by|before|until|after) (?:early |mid-?|late )?(?:{_MONTHS})\b"),
            0.7,
        ),
        (
            re.compile(r"\b(?:next|this) (?:year|quarter|month|fall|spring|summer|winter)\b", _I),
            0.65,
        ),
        (re.compile(r"\b(?:timeline|timing|kicks? off|freeze)\b", _I), 0.75),
        (re.compile(r"\b(?:\d+|thirty|sixty|ninety)\s+days\b", _I), 0.7),
    ],
    "stakeholder_signals": [
        (re.compile(r"\b(?:CFO|COO|CMO|CEO|CIO|CTO|CNO)\b"), 0.9),
        (re.compile(r"\bChief \w+ Officer\b", _I), 0.9),
        (re.compile(r"\bsign[- ]?off\b", _I), 0.9),
        (re.compile(r"\b(?:economic buyer|sponsors?|veto)\b", _I), 0.9),
        (re.compile(r"\bapprov(?:e|es|ed|al|als)\b", _I), 0.85),
        (re.compile(r"\bfinance committee\b", _I), 0.85),
        (re.compile(r"\b(?:director|vice president|VP|controller)\b", _I), 0.7),
        (re.compile(r"\breports? to\b", _I), 0.7),
        (re.compile(r"\b(?:decision|signs|looped in|buy-?in)\b", _I), 0.65),
    ],
    "objection_signals": [
        (re.compile(r"\btoo expensive\b", _I), 0.9),
        (re.compile(r"\b(?:worried|concern(?:s|ed)?|skeptical|nervous|push ?back)\b", _I), 0.9),
        (re.compile(r"\b(?:not|wasn't|isn't|aren't) sure\b", _I), 0.85),
        (
            re.compile(
                r"\b(?:headache|get in line|blew up|surveillance|watching us|babysit)\b", _I
            ),
            0.85,
        ),
        (re.compile(r"\b(?:a lot )?more than\b[^.?!]{0,30}\bthough\b", _I), 0.85),
        (re.compile(r"\b(?:expensive|risks?|harder)\b", _I), 0.7),
    ],
    "product_gaps": [
        (re.compile(r"\bwish ?list\b", _I), 0.9),
        (
            re.compile(
                r"\b(?:doesn't|does not|don't|do not) (?:support|offer|generate|write)\b", _I
            ),
            0.9,
        ),
        (re.compile(r"\broadmap\b", _I), 0.9),
        (re.compile(r"\b(?:feature request|formal request|log (?:it|that|this))\b", _I), 0.85),
        (re.compile(r"\b(?:two-way|doesn't exist)\b", _I), 0.85),
        (re.compile(r"\b(?:wish|feature|can it|does it|would love|I'd want)\b", _I), 0.7),
    ],
}
_SPEAKER_LINE = re.compile(r"^\s*\[\d{1,2}:\d{2}(?::\d{2})?\]\s*[^:\n]{1,80}:\s*")
_MAX_PER_TYPE = 4


def _competitor_patterns(names: Sequence[str]) -> list[tuple[re.Pattern[str], float]]:
    patterns: list[tuple[re.Pattern[str], float]] = []
    for name in names:
        words = name.split()
        if not words:
            continue
        full = r"\s+".join(re.escape(w) for w in words)
        patterns.append((re.compile(rf"(?<!\w){full}(?!\w)", _I), 0.95))
        for word in words:
            if len(words) > 1 and len(word) >= 4 and re.search(r"[a-z][A-Z]", word):
                patterns.append((re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", _I), 0.85))
    return patterns


def _quote_spans(chunk: str) -> list[tuple[int, int]]:
    lines: list[tuple[int, int]] = []
    offset = 0
    for line in chunk.splitlines(keepends=True):
        lines.append((offset, offset + len(line.rstrip("\r\n"))))
        offset += len(line)
    speaker = [(s, e) for s, e in lines if _SPEAKER_LINE.match(chunk[s:e])]
    spans: list[tuple[int, int]] = []
    for start, end in speaker or lines:
        prefix = _SPEAKER_LINE.match(chunk[start:end])
        content_start = start + (prefix.end() if prefix else 0)
        for s, e in sentence_spans(chunk[content_start:end]):
            spans.append((content_start + s, content_start + e))
    return spans


def _field(prompt: Prompt, source: str) -> str:
    text = prompt.field_text(source)
    if text is None or not text.strip():
        raise ValidationFailed(f"the prompt has no {source} block")
    return text


def _optional_object(prompt: Prompt, name: str) -> Mapping[str, Any]:
    value = prompt.optional_entity(name)
    return value if isinstance(value, Mapping) else {}


def call_signals(prompt: Prompt) -> dict[str, Any]:
    """Verbatim quotes per signal type, strongest four of each, in transcript order."""
    chunk = _field(prompt, "chunk")
    listed = prompt.field_json("competitors")
    if listed is None:
        raise ValidationFailed("the prompt has no competitors block")
    competitors = string_list(listed, "the competitors block")
    patterns = dict(_SIGNAL_PATTERNS)
    patterns["competitor_mentions"] = _competitor_patterns(competitors)
    found: list[tuple[int, int, str, str, float]] = []  # (start, type order, type, quote, conf)
    seen: set[tuple[str, str]] = set()
    for start, end in _quote_spans(chunk):
        quote = chunk[start:end]
        if len(quote.split()) < 4 or len(quote) > 1000:
            continue
        for order, signal_type in enumerate(SIGNAL_TYPES):
            hits = sorted(
                (conf for p, conf in patterns[signal_type] if p.search(quote)), reverse=True
            )
            if not hits:
                continue
            key = (signal_type, " ".join(quote.casefold().split()))
            if key in seen:
                continue
            seen.add(key)
            confidence = round(min(0.95, hits[0] + 0.03 * (len(hits) - 1)), 2)
            found.append((start, order, signal_type, quote, confidence))
    kept: list[tuple[int, int, str, str, float]] = []
    for signal_type in SIGNAL_TYPES:
        of_type = [f for f in found if f[2] == signal_type]
        kept += sorted(of_type, key=lambda f: (-f[4], f[0]))[:_MAX_PER_TYPE]
    kept.sort(key=lambda f: (f[0], f[1]))
    return {"signals": [{"type": t, "quote": q, "confidence": c} for _, _, t, q, c in kept]}


# -- call_summary ------------------------------------------------------------------------------

_SIGNAL_LABELS = {
    "budget_signals": "budget",
    "timeline_signals": "timeline",
    "stakeholder_signals": "stakeholder",
    "objection_signals": "objection",
    "competitor_mentions": "competitor",
    "product_gaps": "product gap",
}
_DRIVER_TYPES = ("budget_signals", "timeline_signals", "stakeholder_signals")
_FULL_DATE = re.compile(
    rf"\b(?:(20\d\d)-(\d\d)-(\d\d)|({_MONTHS})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(20\d\d))\b"
)
_CLOSING_WORDS = re.compile(r"\b(?:sign(?:s|ed|ing)?|close[sd]?|closing|contract|agreement)\b", _I)


def _signals_in(prompt: Prompt) -> list[dict[str, Any]]:
    if prompt.field_text("signals_json") is None:
        raise ValidationFailed("the prompt has no signals_json block")
    listed = prompt.field_json("signals_json")
    if not isinstance(listed, list):
        raise ValidationFailed("the signals_json block must be a list")
    signals = []
    for index, item in enumerate(listed):
        where = f"signals_json[{index}]"
        if not isinstance(item, Mapping):
            raise ValidationFailed(f"{where} must be an object")
        signal_type = item.get("type")
        if signal_type not in SIGNAL_TYPES:
            raise ValidationFailed(f"{where}.type {signal_type!r} is not a call signal type")
        quote = item.get("quote")
        if not isinstance(quote, str) or not quote.strip():
            raise ValidationFailed(f"{where}.quote is missing")
        confidence = as_number(item.get("confidence"))
        if confidence is None or not 0 <= confidence <= 1:
            raise ValidationFailed(f"{where}.confidence must be a number in [0, 1]")
        signals.append({"type": signal_type, "quote": quote, "confidence": confidence, "i": index})
    return signals


def _close_date(signals: list[dict[str, Any]]) -> str | None:
    months = _MONTHS.split("|")
    for signal in signals:
        quote = signal["quote"]
        if not _CLOSING_WORDS.search(quote):
            continue
        match = _FULL_DATE.search(quote)
        if not match:
            continue
        try:
            if match.group(1):
                found = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
            else:
                month = months.index(match.group(4)) + 1
                found = date(int(match.group(6)), month, int(match.group(5)))
        except ValueError:
            continue
        return found.isoformat()
    return None


def call_summary(prompt: Prompt) -> dict[str, Any]:
    """Three sentences, evidence-backed CRM updates, KC-09 objection candidates."""
    signals = _signals_in(prompt)
    deal = _optional_object(prompt, "deal")
    deal_name = opt_str(deal, "name")
    stage = opt_str(deal, "stage")
    subject = one_sentence(deal_name, 200) if deal_name else "The call"
    if stage:
        subject += f" ({humanise(stage)})"
    ranked = sorted(signals, key=lambda s: (-s["confidence"], s["i"]))
    if not ranked:
        summary = [
            f"{subject} surfaced no budget, timeline, stakeholder, objection, competitor or "
            "product-gap signals.",
            "No CRM field has evidence for an update.",
            "No knowledge candidates were proposed.",
        ]
    else:
        counts = {t: sum(1 for s in signals if s["type"] == t) for t in SIGNAL_TYPES}
        listed = ", ".join(f"{n} {_SIGNAL_LABELS[t]}" for t, n in counts.items() if n)
        # What drives the deal (budget, timeline, stakeholders), then what puts it at risk.
        drivers = [s for s in ranked if s["type"] in _DRIVER_TYPES]
        risks = [s for s in ranked if s["type"] not in _DRIVER_TYPES]
        first = (drivers or risks)[0]
        second = (risks or [])[0] if drivers and risks else None
        if second is None:
            second = next((s for s in ranked if s["type"] != first["type"]), None)
        summary = [
            f"{subject} surfaced {len(signals)} signal{'s' if len(signals) != 1 else ''}: "
            f"{listed}.",
            f"Strongest {_SIGNAL_LABELS[first['type']]} signal "
            f'({first["confidence"]:.2f}): "{one_sentence(first["quote"], 450)}".',
        ]
        next_action = opt_str(deal, "next_action")
        if second is not None:
            summary.append(
                f"Main {'risk' if second['type'] not in _DRIVER_TYPES else 'other signal'}, "
                f"{_SIGNAL_LABELS[second['type']]} "
                f'({second["confidence"]:.2f}): "{one_sentence(second["quote"], 450)}".'
            )
        elif next_action:
            summary.append(f"Next action on record: {one_sentence(next_action, 450)}.")
        else:
            summary.append("No other signal type was heard on this call.")
    text = " ".join(summary)
    if len(sentence_spans(text)) != 3:  # a bug here, not a caller error
        raise ProviderError("offline call summary did not come out as three sentences")

    timeline = next((s for s in ranked if s["type"] == "timeline_signals"), None)
    next_action = (
        clip(f"Confirm the timeline raised on the call: {flatten(timeline['quote'])}", 300)
        if timeline
        else None
    )
    kc_updates = []
    seen: set[str] = set()
    for signal in signals:
        key = " ".join(signal["quote"].casefold().split())
        if signal["type"] != "objection_signals" or key in seen:
            continue
        seen.add(key)
        context = f"Objection heard on {deal_name or 'a call'}" + (
            f" ({stage} stage)" if stage else ""
        )
        kc_updates.append(
            {
                "kind": "kc_update_candidate",
                "domain": "KC-09",
                "content": clip(f'{context}: "{" ".join(signal["quote"].split())}"', 1500),
                "confidence": signal["confidence"],
            }
        )
    return {
        "executive_summary": text,
        "crm_updates": {
            "deal_stage": None,
            "next_action": next_action,
            "close_date": _close_date(ranked),
        },
        "kc_updates": kc_updates[:MAX_KC_UPDATES],
    }


# -- follow_up_draft ---------------------------------------------------------------------------


FOLLOW_UP_SENTENCES = 5


def follow_up_draft(prompt: Prompt) -> dict[str, Any]:
    """A recap email to the contact, citing exemplar titles as references."""
    recap = " ".join(_field(prompt, "recording_summary").split())
    contact = prompt.entity("contact")
    name = opt_str(contact, "name") if isinstance(contact, Mapping) else None
    if not name:
        raise PromptLacks("contact.name")
    deal = _optional_object(prompt, "deal")
    titles = [" ".join(t.split()) for b in prompt.exemplars() if (t := b.get("title"))]
    deal_name = opt_str(deal, "name")
    subject = clip(
        f"Recap and next steps: {deal_name}" if deal_name else "Recap and next steps", 120
    )
    subject = " ".join(subject.split()[:MAX_SUBJECT_WORDS])  # CONST-006, as the task asks
    sender = "The ZoomProp Team"
    head = f"Hi {first_name(name)},\n\nThank you for the time on the call; my recap: "
    tail_parts = []
    next_action = opt_str(deal, "next_action")
    if next_action:
        tail_parts.append(f"Next step: {next_action.rstrip('.')}.")
    if titles:
        tail_parts.append("Related material I can share: " + "; ".join(titles[:3]) + ".")
    tail = "\n\n" + "\n\n".join(tail_parts) + f"\n\nBest,\n{sender}"
    room = 3000 - len(head) - len(tail)
    # CONST-006 (a follow-up's limit is T3's five sentences): the recap's sentences that fit
    kept: list[str] = []
    for sentence in split_sentences(clip(recap, max(room, 50))):
        if count_sentences(head + " ".join([*kept, sentence]) + tail) > FOLLOW_UP_SENTENCES:
            break
        kept.append(sentence)
    body = head + (" ".join(kept) or "(see the call notes)") + tail
    return {"subject": subject, "body": clip(body, 3000)}
