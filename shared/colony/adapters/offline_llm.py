"""The offline ChatModel: deterministic, no network, model name ``offline-deterministic-v1``.

It is not a language model. For each contract it computes an answer from ``request.context``
alone (never from the rendered prompt in ``request.messages``) with rules, templates and
extraction, then returns it as JSON text that validates against
``OUTPUT_CONTRACTS[request.output_name]``. Usage is an estimate (``ceil(chars / 4)`` of the
messages' text in, of the answer out), since there is no tokenizer behind it.

Context shapes (callers build exactly these; a missing required key raises
``ValidationFailed`` naming it; an unknown ``output_name`` raises ``ProviderError``):

- ``qualification_score``: ``{"contact": {...contacts.json entry...}, "icp": {"description",
  "rubric", "anti_icp_rules", "tiers"?}, "today": "YYYY-MM-DD"}``. Anti-ICP matches
  (``colony.policy.anti_icp``) give total 0, all dimensions 0, the rule ids as
  ``disqualifiers`` and ``disqualify``. Otherwise the rubric is applied as written: size =
  the highest ``bands`` entry whose ``min_employees`` ``enrichment.employee_count`` meets;
  vertical = ``points`` for ``preferred``, ``adjacent_points`` for ``adjacent``; tech_stack =
  ``points_per_match`` per distinct ``enrichment.tech_stack`` entry in ``preferred``; signals
  = ``points_per_signal`` per contact signal whose type is in ``types``; timing =
  ``points_recent`` when the freshest signal is at most ``recent_signal_days`` before
  ``today``, ``points_older`` when older (or undated), ``points_none`` without signals. Every
  dimension is capped at its ``weight``. With ``tiers`` the tier is the highest whose
  ``min_score`` is met and T1/T2 qualify, the lowest tier disqualifies, the rest hold;
  without tiers: qualify >= 65, hold >= 40, else disqualify.
- ``prospect_enrichment``: ``{"contact": {...}}``. The summary restates the contact's own
  fields (name, title, company, enrichment); ``signals`` are the contact's existing signals
  (type + detail) of a known type, nothing added; ``persona`` maps the title to a KC-03
  persona or is null.
- ``outbound_message``: ``{"contact": {"name", "company", "enrichment", "signals": [{type,
  detail, date}]}, "angle", "tier", "step", "exemplars": [{"content", "tags": {"angle",
  "tier", ...}}], "competitors": [names]}``. The most recent signal (by date, undated last)
  is the one referenced: its first sentence opens the body verbatim (competitor names
  redacted), then one angle sentence about the decision that signal type forces, for T3-T5 a
  sentence built from ``enrichment.facilities_count``, and one ask; the subject comes from the
  signal type (at most 8 words). The exemplar of the same angle (and tier, when there is one)
  supplies the sign-off; no exemplar sentence is copied, because exemplars name other
  prospects and carry their numbers. The draft is checked with
  ``colony.policy.outbound.check_outbound`` before it is returned.
  Callers route missing data to ``MissingData`` first: a contact without ``name`` or
  ``signals`` raises ``ValidationFailed`` naming the field.
- ``call_signals``: ``{"chunk": str, "competitors": [names]?}``. Pattern rules per signal type
  over the chunk's sentences (speaker lines only, when the chunk has ``[hh:mm:ss] Name:``
  lines); every ``quote`` is a verbatim substring of the chunk; at most 4 per type (strongest
  first), reported in transcript order. Competitors default to CareSpace Analytics,
  FacilityIQ and LeaseLogic Health.
- ``call_summary``: ``{"signals": [{type, quote, confidence}], "deal": {"name", "stage",
  "value", "next_action"}}``. Three sentences: signal counts by type, the strongest budget /
  timeline / stakeholder quote, the strongest objection / competitor / gap quote (quotes
  flattened to one sentence); ``crm_updates.next_action`` from the strongest timeline signal,
  ``close_date`` only from a full date in a quote about signing or closing, ``deal_stage``
  always null (a stage change needs a person); one KC-09 candidate per distinct objection.
- ``follow_up_draft``: ``{"recording_summary": str, "deal": {...}?, "contact": {"name", ...},
  "exemplars": [{"title"?, "content", "tags"?}]?, "sender": str?}``. A recap email; exemplar
  titles are cited as references.
- ``content_piece``: ``{"topic": str, "format": linkedin_post | blog_post | one_pager |
  email_newsletter, "exemplars": [{"title"?, "content"}], "competitors": [names]?}``. The
  exemplar sentences that best overlap the topic, in source order, laid out for the format.
- ``deployment_kit``: ``{"deal": {"name", "stage"?, "value"?, "next_action"?, "close_date"?},
  "exemplars": [{"title", "content"}]}``. A deal summary section, then one section per
  playbook.
- ``daily_brief``: ``{"snapshot": {"deals_by_stage": {stage: count}, "approval_queue_count",
  "messages_sent", "content_published", "circuit_breaker", "bounce_rate", "reply_rate"},
  "prior_brief": str | None}``. Five sections, numbers copied from the snapshot (a rate in
  [0, 1] is shown as a percentage followed by the raw value), and with a prior brief one
  continuity clause comparing a number parsed from it (bounce rate, approval queue or
  messages sent), or a generic reference when none parses.
- ``conversation_summary``: ``{"turns": [{"role", "content"}], "previous_summary":
  {decisions, entity_ids, pending_items, user_preferences} | None}``. Sentences with decision
  words, entity ids (``P-001``, ``AGT-005``, UUIDs), pending-work words and (user turns only)
  preference words; the previous summary's items come first, duplicates dropped, each list
  capped and the whole kept under ~300 estimated tokens by dropping the oldest items.
- ``orchestrator_reply`` (AGT-001's chat turn; the contract is
  ``colony.contracts.chat.OrchestratorReply``): ``{"message": str, "tool_results": [{"name",
  "ok", "result" | "error"}], "tools": [names offered], "pending_approvals": [{id, kind,
  summary}], "daily_brief": str | None, "knowledge": [{"domain", "title"}]}``. With tool
  results from this turn it answers by describing them (counts, ids and names copied from
  the results; a failed tool is reported with its error message). Otherwise it maps the
  message's intent to one tool call, checked in this order, and only to tools offered:
  ``approve``/``reject`` + an item id → ``decide_approval``; ``launch`` … ``campaign`` →
  ``launch_campaign`` (the first angle word named, default Signal; the tier as written —
  ``T9`` is passed through so the flow's argument check rejects it; ``P-001``-style ids as
  ``contact_external_ids``, else omitted); ``pipeline``/``deals``/``snapshot`` →
  ``pipeline_snapshot``; ``approval``/``queue``/``pending`` → ``list_approvals``;
  ``write``/``draft``/``post``/``blog``/``newsletter``/``one-pager`` →
  ``ask_content_agent`` (format from the word); ``search``/``find``/``knowledge``/a KC id →
  ``search_knowledge`` (that domain when named). Anything else gets a text answer from the
  context: the brief's first sentence, the knowledge titles and the queue size. The tool
  call comes back as ``ModelResponse.tool_calls`` with empty text, as real providers do.
- ``missing_data``: ``{"missing_fields": [str], "reason": str?}``.
- ``kc_update_candidate``: ``{"domain": "KC-xx", "content": str, "confidence": float?}``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any, get_args

from pydantic import ValidationError

from colony.contracts.common import ANGLES
from colony.contracts.outputs import OUTPUT_CONTRACTS, OutboundMessage, SignalType
from colony.errors import ProviderError, ValidationFailed
from colony.policy.anti_icp import match_rules
from colony.policy.outbound import (
    MAX_SENTENCES,
    check_outbound,
    competitor_mentions,
    key_tokens,
    redact_competitors,
    sentence_spans,
    split_sentences,
)
from colony.ports import ModelRequest, ModelResponse, ToolCall, Usage

MODEL_NAME = "offline-deterministic-v1"
DEFAULT_COMPETITORS = ("CareSpace Analytics", "FacilityIQ", "LeaseLogic Health")
SIGNAL_TYPES: tuple[str, ...] = get_args(SignalType)
PROSPECT_SIGNAL_TYPES = (
    "expansion", "hiring", "leadership_change", "funding", "lease_expiry", "consolidation",
    "tech_adoption",
)  # fmt: skip
DEAL_STAGES = ("discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost")
CONTENT_FORMATS = ("linkedin_post", "blog_post", "one_pager", "email_newsletter")

Handler = Callable[[Mapping[str, Any]], dict[str, Any]]


def estimate_tokens(text: str) -> int:
    """An estimate, not a tokenizer count: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


class OfflineChatModel:
    """Deterministic ``ChatModel`` for local runs and tests; see the module docstring."""

    model = MODEL_NAME

    def request(self, request: ModelRequest) -> ModelResponse:
        if request.output_name == ORCHESTRATOR_OUTPUT:
            return _orchestrator_response(request)
        handler = _HANDLERS.get(request.output_name)
        contract = OUTPUT_CONTRACTS.get(request.output_name)
        if handler is None or contract is None:
            raise ProviderError(
                f"the offline model has no answer for output {request.output_name!r}"
            )
        if not isinstance(request.context, Mapping):
            raise ValidationFailed("request.context must be an object")
        answer = handler(request.context)
        try:
            validated = contract.model_validate(answer)
        except ValidationError as exc:  # our own bug: say so loudly
            raise ProviderError(
                f"offline answer for {request.output_name!r} broke its contract: {exc}"
            ) from exc
        text = validated.model_dump_json()
        prompt = "".join(message.content for message in request.messages)
        return ModelResponse(
            text=text,
            usage=Usage(tokens_in=estimate_tokens(prompt), tokens_out=estimate_tokens(text)),
            model=MODEL_NAME,
        )


# -- context access ----------------------------------------------------------------------------


def _require(ctx: Mapping[str, Any], key: str, where: str = "context") -> Any:
    value = ctx.get(key)
    if value is None or (isinstance(value, str | list | tuple | dict) and not value):
        raise ValidationFailed(f"{where}.{key} is missing")
    return value


def _mapping(ctx: Mapping[str, Any], key: str, where: str = "context") -> Mapping[str, Any]:
    value = _require(ctx, key, where)
    if not isinstance(value, Mapping):
        raise ValidationFailed(f"{where}.{key} must be an object")
    return value


def _text(ctx: Mapping[str, Any], key: str, where: str = "context") -> str:
    value = _require(ctx, key, where)
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed(f"{where}.{key} must be a non-empty string")
    return value


def _items(ctx: Mapping[str, Any], key: str, where: str = "context") -> list[Mapping[str, Any]]:
    value = ctx.get(key)
    if value is None:
        return []
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ValidationFailed(f"{where}.{key} must be a list")
    items = list(value)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValidationFailed(f"{where}.{key}[{index}] must be an object")
    return items


def _names(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationFailed(f"{where} must be a list of strings")
    return [item for item in value if isinstance(item, str) and item.strip()]


def _opt_str(ctx: Mapping[str, Any], key: str) -> str | None:
    value = ctx.get(key)
    if isinstance(value, str) and value.strip():
        return " ".join(value.split())
    return None


def _number(value: Any) -> float | None:
    """A finite real number (int, float or Decimal, as SQL aggregates return), else None."""
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def _parse_date(value: Any) -> date | None:
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


# -- text helpers ------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary with an ellipsis when cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-") + "…"


def _flatten(text: str) -> str:
    """One sentence: whitespace collapsed, inner sentence ends turned into semicolons."""
    parts = [p.strip().rstrip(".!?…").strip() for p in split_sentences(" ".join(text.split()))]
    return "; ".join(p for p in parts if p)


def _one_sentence(text: str, limit: int) -> str:
    """A flattened sentence clipped without an ellipsis (which would count as a boundary)."""
    flat = _flatten(text)
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    return (cut[: cut.rindex(" ")] if " " in cut else cut).rstrip(" ,;:-")


def _first_name(name: str) -> str:
    words = name.split()
    if len(words) >= 2 and words[0].rstrip(".").casefold() in {"dr", "mr", "mrs", "ms", "prof"}:
        return f"{words[0]} {words[-1]}"
    return words[0]


def _humanise(code: str) -> str:
    return code.replace("_", " ")


_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n?", re.DOTALL)


def _split_front_matter(content: str) -> tuple[dict[str, str], str]:
    match = _FRONT_MATTER.match(content)
    if not match:
        return {}, content
    meta: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip()] = value.strip()
    return meta, content[match.end() :]


def _exemplar_title(item: Mapping[str, Any], body: str, meta: Mapping[str, str]) -> str | None:
    tags = item.get("tags") if isinstance(item.get("tags"), Mapping) else {}
    for candidate in (item.get("title"), (tags or {}).get("title"), meta.get("title")):
        if isinstance(candidate, str) and candidate.strip():
            return " ".join(candidate.split())
    heading = re.search(r"^#\s+(.+)$", body, re.MULTILINE)
    return heading.group(1).strip() if heading else None


def _exemplar(item: Mapping[str, Any], index: int, where: str) -> tuple[str | None, str]:
    """(title, body without front matter) of an exemplar item."""
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValidationFailed(f"{where}[{index}].content is missing")
    meta, body = _split_front_matter(content)
    return _exemplar_title(item, body, meta), body.strip()


def _prose_sentences(markdown: str) -> list[str]:
    """Sentences of the prose in a markdown body: headings and table rows dropped."""
    kept: list[str] = []
    for raw in markdown.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "|", "```")) or set(line) <= {"-", "|", ":", " "}:
            kept.append("")
            continue
        line = re.sub(r"^(?:[-*\u2022]|\d{1,2}[.)])\s+", "", line)
        line = re.sub(r"\*\*|__|`", "", line)
        kept.append(line)
    sentences = []
    for sentence in split_sentences("\n".join(kept)):
        sentence = " ".join(sentence.split())
        if sentence.count('"') % 2:  # a quotation split across sentences: drop the stray mark
            sentence = sentence.strip('"')
        sentences.append(sentence)
    return sentences


# -- qualification_score -----------------------------------------------------------------------

_DIMENSIONS = ("size", "vertical", "tech_stack", "signals", "timing")


def _dimension(rubric: Mapping[str, Any], name: str) -> tuple[Mapping[str, Any], int]:
    spec = _mapping(rubric, name, "icp.rubric")
    weight = _number(spec.get("weight"))
    if weight is None or weight < 0:
        raise ValidationFailed(f"icp.rubric.{name}.weight is missing")
    return spec, min(int(weight), 100)


def _points(spec: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    value = _number(spec.get(key))
    return default if value is None else value


def _casefolded(values: Any) -> set[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        return set()
    return {v.strip().casefold() for v in values if isinstance(v, str)}


def _contact_signals(contact: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    signals = contact.get("signals")
    if isinstance(signals, str) or not isinstance(signals, Sequence):
        return []
    return [s for s in signals if isinstance(s, Mapping)]


def _score_dimensions(
    contact: Mapping[str, Any], rubric: Mapping[str, Any], today: date
) -> dict[str, tuple[int, int]]:
    """Dimension name -> (points, weight), each capped at its weight."""
    enrichment = contact.get("enrichment")
    enrichment = enrichment if isinstance(enrichment, Mapping) else {}
    scores: dict[str, tuple[int, int]] = {}

    spec, weight = _dimension(rubric, "size")
    employees = _number(enrichment.get("employee_count"))
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
        for s in _contact_signals(contact)
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
        dates = [d for d in (_parse_date(s.get("date")) for s in signals) if d is not None]
        recent_days = _points(spec, "recent_signal_days", 90)
        if dates and (today - max(dates)).days <= recent_days:
            points = _points(spec, "points_recent")
        else:
            points = _points(spec, "points_older")
    scores["timing"] = (min(int(points), weight), weight)
    return scores


def _tier_and_recommendation(icp: Mapping[str, Any], total: int) -> tuple[str | None, str]:
    tiers = [
        t
        for t in icp.get("tiers") or []
        if isinstance(t, Mapping)
        and isinstance(t.get("tier"), str)
        and _number(t.get("min_score")) is not None
    ]
    if tiers:
        ordered = sorted(tiers, key=lambda t: -_points(t, "min_score"))
        tier = next((t for t in ordered if total >= _points(t, "min_score")), ordered[-1])
        name = str(tier["tier"])
        if name in {"T1", "T2"}:
            return name, "qualify"
        if tier is ordered[-1]:
            return name, "disqualify"
        return name, "hold"
    if total >= 65:
        return None, "qualify"
    return None, "hold" if total >= 40 else "disqualify"


def _qualification(ctx: Mapping[str, Any]) -> dict[str, Any]:
    contact = _mapping(ctx, "contact")
    icp = _mapping(ctx, "icp")
    today = _parse_date(_require(ctx, "today"))
    if today is None:
        raise ValidationFailed("context.today must be a YYYY-MM-DD date")
    rubric = _mapping(icp, "rubric", "icp")
    matches = match_rules(contact, icp.get("anti_icp_rules") or [])
    if matches:
        ids = [m.rule_id for m in matches]
        reasoning = f"Disqualified by the anti-ICP filter ({', '.join(ids)}): {matches[0].reason}"
        return {
            "total_score": 0,
            "dimension_scores": dict.fromkeys(_DIMENSIONS, 0),
            "disqualifiers": ids,
            "recommendation": "disqualify",
            "reasoning": _clip(_flatten(reasoning) + ".", 400),
        }
    scores = _score_dimensions(contact, rubric, today)
    total = min(sum(points for points, _ in scores.values()), 100)
    tier, recommendation = _tier_and_recommendation(icp, total)
    ranked = sorted(
        _DIMENSIONS,
        key=lambda d: (-(scores[d][0] / scores[d][1] if scores[d][1] else 0), -scores[d][0]),
    )

    def label(d: str) -> str:
        return f"{_humanise(d)} ({scores[d][0]}/{scores[d][1]})"

    tier_text = f", tier {tier}" if tier else ""
    first = f"Scored {total}/100{tier_text} ({recommendation}), led by {label(ranked[0])}"
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
        "recommendation": recommendation,
        "reasoning": _clip(f"{first} {second}", 400),
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


def _enrichment(ctx: Mapping[str, Any]) -> dict[str, Any]:
    contact = _mapping(ctx, "contact")
    enrichment = contact.get("enrichment")
    enrichment = enrichment if isinstance(enrichment, Mapping) else {}
    name, title, company = (_opt_str(contact, k) for k in ("name", "title", "company"))
    if not enrichment and not company:
        raise ValidationFailed("contact.enrichment is missing")
    sentences: list[str] = []
    who = ", ".join(p for p in (name, title) if p)
    if who or company:
        sentences.append(f"{who or 'Contact'}{f' at {company}' if company else ''}.")
    facts: list[str] = []
    vertical = _opt_str(enrichment, "vertical")
    sub_vertical = _opt_str(enrichment, "sub_vertical")
    if vertical:
        facts.append(
            f"a {_humanise(vertical)}" + (f" ({_humanise(sub_vertical)})" if sub_vertical else "")
        )
    employees = _number(enrichment.get("employee_count"))
    if employees is not None:
        facts.append(f"{int(employees):,} employees")
    facilities = _number(enrichment.get("facilities_count"))
    if facilities is not None:
        facts.append(f"{int(facilities)} facilities")
    where = ", ".join(
        p for p in (_opt_str(enrichment, "region"), _opt_str(enrichment, "country")) if p
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
        value = _opt_str(enrichment, key)
        if value:
            sentences.append(f"{key.capitalize()}: {_humanise(value)}.")
    news = _opt_str(enrichment, "recent_news")
    if news:
        sentences.append(f"Recent news: {news}")
    summary = ""
    for sentence in sentences:
        candidate = f"{summary} {sentence}".strip()
        if len(candidate) > 600:
            break
        summary = candidate
    signals = [
        {"type": s["type"], "detail": _clip(" ".join(str(s["detail"]).split()), 400)}
        for s in _contact_signals(contact)
        if s.get("type") in PROSPECT_SIGNAL_TYPES
        and isinstance(s.get("detail"), str)
        and s["detail"].strip()
    ]
    return {
        "summary": summary or _clip(sentences[0], 600),
        "signals": signals,
        "persona": _persona(title),
    }


# -- outbound_message --------------------------------------------------------------------------

_DECISIONS = {
    "expansion": "which services move into the new space and which can stay where they are",
    "lease_expiry": "which leases to renew, shrink or exit before each notice window",
    "consolidation": "which sites to combine and how many rooms each clinic really needs",
    "hiring": "where the new people will actually see patients",
    "leadership_change": "the fact base a new leader asks for on the outpatient footprint",
    "funding": "where the new capital should go first",
    "tech_adoption": "how the new system's data turns into space and lease decisions",
}
_GENERIC_DECISION = "what the change means for your space and leases"
_SUBJECTS = {
    "expansion": "Before the new space opens",
    "lease_expiry": "Your upcoming lease decisions",
    "consolidation": "One footprint after the consolidation",
    "hiring": "Where the new hires will practice",
    "leadership_change": "An idea for the first 100 days",
    "funding": "Putting the new funding to work",
    "tech_adoption": "Turning the new system into decisions",
}
_ANGLE_LINES = {
    "Signal": "Moments like this usually force a decision on {decision}, and room-level "
    "occupancy data turns that decision into a fact base.",
    "Pain": "The hard part is usually deciding {decision} when every department says its "
    "rooms are full.",
    "Referral": "Peer organizations that faced the same moment started by building a "
    "room-level fact base on {decision}.",
    "PatternBreak": "Here is a question few vendors ask: how many of your current exam rooms "
    "sit empty on a Friday afternoon, before anyone decides {decision}?",
    "Insight": "One pattern ZoomProp sees again and again: rooms that look full on the schedule "
    "are often far emptier in practice, and that changes {decision}.",
}
_ASKS = {
    "Signal": "Worth 20 minutes to see what your own numbers would show?",
    "Pain": "How is your team making that call today?",
    "Referral": "Are you the right person to talk to about this, or is someone else?",
    "PatternBreak": "If the answer is not obvious, would a 20-minute look be useful?",
    "Insight": "Does that match what you see in your own clinics?",
}


def _pick_signal(contact: Mapping[str, Any]) -> Mapping[str, Any]:
    signals = [
        s
        for s in _contact_signals(contact)
        if isinstance(s.get("detail"), str) and s["detail"].strip()
    ]
    if not signals:
        raise ValidationFailed("contact.signals is missing: an outbound message needs a signal")
    order = {id(s): i for i, s in enumerate(signals)}
    return min(
        signals,
        key=lambda s: (
            -(_parse_date(s.get("date")) or date.min).toordinal(),
            order[id(s)],
        ),
    )


def _pick_exemplar(
    exemplars: list[Mapping[str, Any]], angle: str, tier: str
) -> Mapping[str, Any] | None:
    def tag(item: Mapping[str, Any], key: str) -> Any:
        tags = item.get("tags")
        return tags.get(key) if isinstance(tags, Mapping) else item.get(key)

    for wanted in ((angle, tier), (angle, None)):
        for item in exemplars:
            if tag(item, "angle") == wanted[0] and (
                wanted[1] is None or tag(item, "tier") == wanted[1]
            ):
                return item
    return exemplars[0] if exemplars else None


def _sender(exemplar: Mapping[str, Any] | None, tier: str) -> str:
    name = "The ZoomProp Team"
    if exemplar is not None and isinstance(exemplar.get("content"), str):
        lines = [line.strip() for line in exemplar["content"].strip().splitlines() if line.strip()]
        last = lines[-1] if lines else ""
        words = last.replace(",", " ").split()
        if (
            last
            and len(words) <= 4
            and not last.endswith((".", "?", "!"))
            and words[0][0].isupper()
        ):
            name = words[0]
            return name if MAX_SENTENCES[tier] <= 3 else f"{name}, ZoomProp"
    return name


def _outbound(ctx: Mapping[str, Any]) -> dict[str, Any]:
    contact = _mapping(ctx, "contact")
    name = _opt_str(contact, "name")
    if not name:
        raise ValidationFailed("contact.name is missing: an outbound message needs a name")
    angle = _text(ctx, "angle")
    tier = _text(ctx, "tier")
    if angle not in ANGLES:
        raise ValidationFailed(f"context.angle {angle!r} is not one of {ANGLES}")
    if tier not in MAX_SENTENCES:
        raise ValidationFailed(f"context.tier {tier!r} is not one of {tuple(MAX_SENTENCES)}")
    step = ctx.get("step", 1)
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise ValidationFailed("context.step must be a positive integer")
    competitors = _names(ctx.get("competitors"), "context.competitors")
    exemplars = _items(ctx, "exemplars")
    signal = _pick_signal(contact)
    detail = " ".join(str(signal["detail"]).split())
    signal_type = str(signal.get("type") or "")
    decision = _DECISIONS.get(signal_type, _GENERIC_DECISION)

    opener = redact_competitors(split_sentences(detail)[0], competitors, "another vendor")
    if opener[-1] not in ".!?":
        opener += "."
    if step > 1:
        opener = f"Following up on one detail from my last note: {opener}"
    sentences = [opener, _ANGLE_LINES[angle].format(decision=decision)]
    if MAX_SENTENCES[tier] > 3:
        enrichment = contact.get("enrichment")
        facilities = (
            _number(enrichment.get("facilities_count")) if isinstance(enrichment, Mapping) else None
        )
        company = _opt_str(contact, "company")
        if facilities is not None and facilities > 1:
            where = f"the {company} portfolio" if company else "your portfolio"
            sentences.append(
                f"With {int(facilities)} sites in {where}, that decision rarely comes down to "
                "one building."
            )
    sentences.append(_ASKS[angle])
    sentences = [redact_competitors(s, competitors, "another vendor") for s in sentences]

    subject = _SUBJECTS.get(signal_type, "A question about your clinic space")
    if step > 1 and len(subject.split()) <= 6:
        subject = f"Following up: {subject[0].lower()}{subject[1:]}"
    exemplar = _pick_exemplar(exemplars, angle, tier)
    body = f"Hi {_first_name(name)},\n\n{' '.join(sentences)}\n\n{_sender(exemplar, tier)}"
    message = OutboundMessage.model_validate(
        {
            "subject": subject,
            "body": body,
            "angle_used": angle,
            "signal_referenced": _clip(detail, 400),
        }
    )
    details = [
        " ".join(str(s["detail"]).split())
        for s in _contact_signals(contact)
        if isinstance(s.get("detail"), str) and s["detail"].strip()
    ]
    problems = check_outbound(message, tier=tier, contact_signals=details, competitors=competitors)
    if problems:
        raise ProviderError(f"offline outbound draft broke CONST-006: {'; '.join(problems)}")
    return message.model_dump()


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


def _call_signals(ctx: Mapping[str, Any]) -> dict[str, Any]:
    chunk = _text(ctx, "chunk")
    competitors = _names(ctx.get("competitors"), "context.competitors") or list(DEFAULT_COMPETITORS)
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


def _signals_in(ctx: Mapping[str, Any]) -> list[dict[str, Any]]:
    signals = []
    for index, item in enumerate(_items(ctx, "signals")):
        where = f"context.signals[{index}]"
        signal_type = item.get("type")
        if signal_type not in SIGNAL_TYPES:
            raise ValidationFailed(f"{where}.type {signal_type!r} is not a call signal type")
        quote = item.get("quote")
        if not isinstance(quote, str) or not quote.strip():
            raise ValidationFailed(f"{where}.quote is missing")
        confidence = _number(item.get("confidence"))
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


def _call_summary(ctx: Mapping[str, Any]) -> dict[str, Any]:
    signals = _signals_in(ctx)
    deal = ctx.get("deal")
    deal = deal if isinstance(deal, Mapping) else {}
    deal_name = _opt_str(deal, "name")
    stage = _opt_str(deal, "stage")
    subject = _one_sentence(deal_name, 200) if deal_name else "The call"
    if stage:
        subject += f" ({_humanise(stage)})"
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
            f'({first["confidence"]:.2f}): "{_one_sentence(first["quote"], 450)}".',
        ]
        next_action = _opt_str(deal, "next_action")
        if second is not None:
            summary.append(
                f"Main {'risk' if second['type'] not in _DRIVER_TYPES else 'other signal'}, "
                f"{_SIGNAL_LABELS[second['type']]} "
                f'({second["confidence"]:.2f}): "{_one_sentence(second["quote"], 450)}".'
            )
        elif next_action:
            summary.append(f"Next action on record: {_one_sentence(next_action, 450)}.")
        else:
            summary.append("No other signal type was heard on this call.")
    text = " ".join(summary)
    if len(sentence_spans(text)) != 3:  # a bug here, not a caller error
        raise ProviderError("offline call summary did not come out as three sentences")

    timeline = next((s for s in ranked if s["type"] == "timeline_signals"), None)
    next_action = (
        _clip(f"Confirm the timeline raised on the call: {_flatten(timeline['quote'])}", 300)
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
                "content": _clip(f'{context}: "{" ".join(signal["quote"].split())}"', 4000),
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
        "kc_updates": kc_updates,
    }


# -- follow_up_draft ---------------------------------------------------------------------------


def _follow_up(ctx: Mapping[str, Any]) -> dict[str, Any]:
    recap = " ".join(_text(ctx, "recording_summary").split())
    contact = _mapping(ctx, "contact")
    name = _opt_str(contact, "name")
    if not name:
        raise ValidationFailed("contact.name is missing")
    deal = ctx.get("deal")
    deal = deal if isinstance(deal, Mapping) else {}
    titles = []
    for index, item in enumerate(_items(ctx, "exemplars")):
        title, _ = _exemplar(item, index, "context.exemplars")
        if title:
            titles.append(title)
    deal_name = _opt_str(deal, "name")
    subject = _clip(
        f"Recap and next steps: {deal_name}" if deal_name else "Recap and next steps", 120
    )
    sender = _opt_str(ctx, "sender") or "The ZoomProp Team"
    head = f"Hi {_first_name(name)},\n\nThank you for the time on the call. Here is my recap:\n\n"
    tail_parts = []
    next_action = _opt_str(deal, "next_action")
    if next_action:
        tail_parts.append(f"Next step: {next_action}")
    if titles:
        tail_parts.append("Related material I can share: " + "; ".join(titles[:3]) + ".")
    tail_parts.append("Let me know if I missed or misheard anything.")
    tail = "\n\n" + "\n\n".join(tail_parts) + f"\n\nBest,\n{sender}"
    room = 3000 - len(head) - len(tail)
    body = head + _clip(recap, max(room, 50)) + tail
    return {"subject": subject, "body": _clip(body, 3000)}


# -- content_piece -----------------------------------------------------------------------------

_PIECE_SIZES = {"linkedin_post": 4, "email_newsletter": 6, "one_pager": 8, "blog_post": 12}


def _content(ctx: Mapping[str, Any]) -> dict[str, Any]:
    topic = " ".join(_text(ctx, "topic").split())
    piece_format = _text(ctx, "format")
    if piece_format not in CONTENT_FORMATS:
        raise ValidationFailed(f"context.format {piece_format!r} is not one of {CONTENT_FORMATS}")
    exemplars = _items(ctx, "exemplars")
    if not exemplars:
        raise ValidationFailed("context.exemplars is missing: a content piece is extractive")
    competitors = _names(ctx.get("competitors"), "context.competitors")
    topic_tokens = key_tokens(topic)
    candidates: list[tuple[int, int, int, str, str | None]] = []  # (score, src, pos, text, title)
    for index, item in enumerate(exemplars):
        title, body = _exemplar(item, index, "context.exemplars")
        for position, sentence in enumerate(_prose_sentences(body)):
            if len(sentence.split()) < 5 or competitor_mentions(sentence, competitors):
                continue
            score = len(key_tokens(sentence) & topic_tokens)
            candidates.append((score, index, position, sentence, title))
    if not candidates:
        raise ValidationFailed("context.exemplars has no usable prose for a content piece")
    chosen = sorted(candidates, key=lambda c: (-c[0], c[1], c[2]))[: _PIECE_SIZES[piece_format]]
    chosen.sort(key=lambda c: (c[1], c[2]))
    title = _clip(topic, 200)
    sentences = [c[3] for c in chosen]
    if piece_format == "linkedin_post":
        body = f"{topic}\n\n" + "\n\n".join(sentences)
    elif piece_format == "one_pager":
        body = f"{title}\n\nKey points:\n" + "\n".join(f"- {s}" for s in sentences)
    elif piece_format == "email_newsletter":
        body = f"This issue: {topic}\n\n" + "\n\n".join(sentences)
        body += "\n\nReply to this email if you would like the full material."
    else:
        parts = [f"# {title}"]
        current: int | None = None
        for _, source, _, sentence, source_title in chosen:
            if source != current:
                parts.append(f"## {source_title or 'Background'}")
                current = source
            parts.append(sentence)
        body = "\n\n".join(parts)
    return {"title": title, "format": piece_format, "body": _clip(body, 8000)}


# -- deployment_kit ----------------------------------------------------------------------------


def _deployment_kit(ctx: Mapping[str, Any]) -> dict[str, Any]:
    deal = _mapping(ctx, "deal")
    deal_name = _text(deal, "name", "deal")
    facts = [f"Deal: {deal_name}."]
    for key, label in (
        ("stage", "Stage"),
        ("value", "Annual value"),
        ("close_date", "Close date"),
        ("next_action", "Next action"),
    ):
        value = deal.get(key)
        if value is None or value == "":
            continue
        if key == "value" and _number(value) is not None:
            value = f"${int(_number(value) or 0):,}"
        elif key == "stage":
            value = _humanise(str(value))
        facts.append(f"{label}: {str(value).strip().rstrip('.')}.")
    sections = [{"heading": "Deal summary", "body": _clip(" ".join(facts), 4000)}]
    for index, item in enumerate(_items(ctx, "exemplars")):
        title, body = _exemplar(item, index, "context.exemplars")
        body = re.sub(r"\A#\s+[^\n]*\n+", "", body).strip() or body
        sections.append(
            {"heading": _clip(title or f"Playbook {index + 1}", 200), "body": _clip(body, 4000)}
        )
    return {"title": _clip(f"Deployment kit: {deal_name}", 200), "sections": sections}


# -- daily_brief -------------------------------------------------------------------------------

_OPEN_STAGES = ("discovery", "demo", "proposal", "negotiation")
_QUIET_BREAKER = {"closed", "ok", "normal", "healthy", "armed", "clear"}


def _count(snapshot: Mapping[str, Any], key: str) -> int:
    value = snapshot.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationFailed(f"snapshot.{key} must be a non-negative integer")
    return value


def _rate(snapshot: Mapping[str, Any], key: str) -> float:
    value = _number(snapshot.get(key))
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


def _daily_brief(ctx: Mapping[str, Any]) -> dict[str, Any]:
    snapshot = _mapping(ctx, "snapshot")
    stages = snapshot.get("deals_by_stage")
    if not isinstance(stages, Mapping):
        raise ValidationFailed("snapshot.deals_by_stage is missing")
    for stage, count in stages.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationFailed(f"snapshot.deals_by_stage.{stage} must be a count")
    queue = _count(snapshot, "approval_queue_count")
    sent = _count(snapshot, "messages_sent")
    published = _count(snapshot, "content_published")
    bounce = _rate(snapshot, "bounce_rate")
    reply = _rate(snapshot, "reply_rate")
    breaker = _text(snapshot, "circuit_breaker", "snapshot")
    prior = ctx.get("prior_brief")
    if prior is not None and not isinstance(prior, str):
        raise ValidationFailed("context.prior_brief must be a string or null")

    order = {stage: i for i, stage in enumerate(DEAL_STAGES)}
    ordered = sorted(stages, key=lambda s: (order.get(s, len(order)), s))
    open_total = sum(int(stages[s]) for s in ordered if not str(s).startswith("closed"))
    listed = ", ".join(f"{_humanise(str(s))} {stages[s]}" for s in ordered) or "no deals"
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


# -- conversation_summary ----------------------------------------------------------------------

_DECISION = re.compile(
    r"\b(?:approve[sd]?|decided|let'?s go|go ahead|launch(?:ed)?|confirmed|agreed)\b", _I
)
_PENDING = re.compile(
    r"\b(?:pending|awaiting|waiting|follow[- ]up|to-?do|need to|needs to|remind me|next step|"
    r"still need|not yet|tomorrow|later)\b",
    _I,
)
_PREFERENCE = re.compile(
    r"\b(?:prefer|always|never|don'?t|do not|please (?:use|keep|avoid)|I like|I want)\b", _I
)
_ENTITY = re.compile(
    r"\b(?:[A-Z]{1,6}-\d{1,6}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12})\b"
)
_LIST_CAPS = {"decisions": 8, "entity_ids": 20, "pending_items": 6, "user_preferences": 8}
_SUMMARY_TOKEN_BUDGET = 300


def _merge(previous: list[str], new: list[str], cap: int) -> list[str]:
    merged: list[str] = []
    seen: set[str] = set()
    for item in [*previous, *new]:
        key = " ".join(item.casefold().split())
        if key and key not in seen:
            seen.add(key)
            merged.append(item)
    return merged[-cap:]


def _conversation_summary(ctx: Mapping[str, Any]) -> dict[str, Any]:
    turns = _items(ctx, "turns")
    previous = ctx.get("previous_summary")
    if previous is not None and not isinstance(previous, Mapping):
        raise ValidationFailed("context.previous_summary must be an object or null")
    found: dict[str, list[str]] = {key: [] for key in _LIST_CAPS}
    for index, turn in enumerate(turns):
        content = turn.get("content")
        role = turn.get("role")
        if not isinstance(content, str):
            raise ValidationFailed(f"context.turns[{index}].content is missing")
        found["entity_ids"] += [m.group(0) for m in _ENTITY.finditer(content)]
        for sentence in split_sentences(content):
            item = _clip(" ".join(sentence.split()), 160)
            if _DECISION.search(sentence) and not sentence.rstrip().endswith("?"):
                found["decisions"].append(item)
            if _PENDING.search(sentence):
                found["pending_items"].append(item)
            if role == "user" and _PREFERENCE.search(sentence):
                found["user_preferences"].append(item)
    summary: dict[str, list[str]] = {}
    for key, cap in _LIST_CAPS.items():
        before = _names((previous or {}).get(key), f"context.previous_summary.{key}")
        summary[key] = _merge(before, found[key], cap)
    while estimate_tokens(json.dumps(summary)) > _SUMMARY_TOKEN_BUDGET:
        longest = max(summary, key=lambda k: sum(len(v) for v in summary[k]))
        if not summary[longest]:
            break
        summary[longest].pop(0)  # the oldest item goes first
    return summary


# -- trivial contracts -------------------------------------------------------------------------


def _missing_data(ctx: Mapping[str, Any]) -> dict[str, Any]:
    fields = _names(_require(ctx, "missing_fields"), "context.missing_fields")
    if not fields:
        raise ValidationFailed("context.missing_fields is missing")
    reason = _opt_str(ctx, "reason") or f"required field(s) missing: {', '.join(fields)}"
    return {"kind": "missing_data", "missing_fields": fields, "reason": _clip(reason, 500)}


def _kc_candidate(ctx: Mapping[str, Any]) -> dict[str, Any]:
    confidence = _number(ctx.get("confidence"))
    return {
        "kind": "kc_update_candidate",
        "domain": _text(ctx, "domain"),
        "content": _clip(_text(ctx, "content"), 4000),
        "confidence": 0.5 if confidence is None else confidence,
    }


_HANDLERS: dict[str, Handler] = {
    "qualification_score": _qualification,
    "prospect_enrichment": _enrichment,
    "outbound_message": _outbound,
    "call_signals": _call_signals,
    "call_summary": _call_summary,
    "follow_up_draft": _follow_up,
    "content_piece": _content,
    "deployment_kit": _deployment_kit,
    "daily_brief": _daily_brief,
    "conversation_summary": _conversation_summary,
    "missing_data": _missing_data,
    "kc_update_candidate": _kc_candidate,
}


# -- orchestrator_reply (AGT-001 chat turn) ----------------------------------------------------

ORCHESTRATOR_OUTPUT = "orchestrator_reply"
_ITEM_ID = re.compile(r"\b(approve|reject)\b\s+(?:item\s+)?([0-9a-f][0-9a-f-]{7,})", _I)
_TIER = re.compile(r"\bT(\d{1,2})\b")
_CONTACT_ID = re.compile(r"\bP-\d{3,6}\b")
_KC_ID = re.compile(r"\bKC-(0[1-9]|10)\b")
_FORMATS = (("newsletter", "email_newsletter"), ("blog", "blog_post"),
            ("one-pager", "one_pager"), ("one pager", "one_pager"))  # fmt: skip


def _orchestrator_response(request: ModelRequest) -> ModelResponse:
    ctx = request.context
    if not isinstance(ctx, Mapping):
        raise ValidationFailed("request.context must be an object")
    offered = {str(t.get("name")) for t in request.tools if isinstance(t, Mapping)}
    decision = _orchestrate(ctx, offered)
    prompt = "".join(message.content for message in request.messages)
    calls: tuple[ToolCall, ...] = ()
    if isinstance(decision, ToolCall):
        text, calls = "", (decision,)
        out = json.dumps({"name": decision.name, "arguments": dict(decision.arguments)})
    else:
        from colony.contracts.chat import OrchestratorReply

        text = OrchestratorReply.model_validate(decision).model_dump_json()
        out = text
    return ModelResponse(
        text=text,
        usage=Usage(tokens_in=estimate_tokens(prompt), tokens_out=estimate_tokens(out)),
        model=MODEL_NAME,
        tool_calls=calls,
    )


def _orchestrate(ctx: Mapping[str, Any], offered: set[str]) -> ToolCall | dict[str, Any]:
    message = " ".join(_text(ctx, "message").split())
    results = _items(ctx, "tool_results")
    if results:
        return {"answer": _clip(" ".join(_describe(r) for r in results), 4000)}
    low = message.casefold()

    def call(name: str, arguments: dict[str, Any]) -> ToolCall | None:
        return ToolCall(name=name, arguments=arguments) if name in offered else None

    decided = _ITEM_ID.search(message)
    candidates: list[ToolCall | None] = []
    if decided:
        candidates.append(
            call(
                "decide_approval", {"item_id": decided.group(2), "action": decided.group(1).lower()}
            )
        )
    if "launch" in low and "campaign" in low:
        angle = next((a for a in ANGLES if a.casefold() in low), "Signal")
        tier = _TIER.search(message)
        arguments: dict[str, Any] = {"angle": angle, "tier": f"T{tier.group(1)}" if tier else "T1"}
        contacts = list(dict.fromkeys(_CONTACT_ID.findall(message)))
        if contacts:
            arguments["contact_external_ids"] = contacts
        candidates.append(call("launch_campaign", arguments))
    if any(w in low for w in ("pipeline", "deals", "snapshot")):
        candidates.append(call("pipeline_snapshot", {}))
    if any(w in low for w in ("approval", "queue", "pending")):
        candidates.append(call("list_approvals", {}))
    if re.search(r"\b(write|draft|post|blog|newsletter|one[- ]pager)\b", low):
        fmt = next((f for word, f in _FORMATS if word in low), "linkedin_post")
        candidates.append(call("ask_content_agent", {"topic": _clip(message, 300), "format": fmt}))
    if re.search(r"\b(search|find|knowledge|what do we know)\b", low) or _KC_ID.search(message):
        arguments = {"query": _clip(message, 500)}
        domain = _KC_ID.search(message)
        if domain:
            arguments["domain"] = domain.group(0)
        candidates.append(call("search_knowledge", arguments))
    chosen = next((c for c in candidates if c is not None), None)
    if chosen is not None:
        return chosen
    return {"answer": _plain_answer(ctx)}


def _plain_answer(ctx: Mapping[str, Any]) -> str:
    parts = ["Offline orchestrator here (deterministic, not a language model)."]
    brief = _opt_str(ctx, "daily_brief")
    if brief:
        first = split_sentences(brief)
        parts.append(f"Today's brief opens: {_clip(first[0] if first else brief, 240)}")
    else:
        parts.append("No daily brief has been written today.")
    titles = [str(k.get("title") or k.get("domain")) for k in _items(ctx, "knowledge")]
    if titles:
        parts.append("Related knowledge: " + "; ".join(titles[:3]) + ".")
    queue = _items(ctx, "pending_approvals")
    parts.append(f"{len(queue)} approval item{'s' if len(queue) != 1 else ''} pending.")
    parts.append("Ask me for the pipeline, a knowledge search, the approval queue, a content "
                 "piece or a campaign launch.")  # fmt: skip
    return " ".join(parts)


def _describe(item: Mapping[str, Any]) -> str:
    name = str(item.get("name") or "tool")
    if not item.get("ok"):
        error = item.get("error") if isinstance(item.get("error"), Mapping) else {}
        return f"I could not run {name}: {(error or {}).get('message', 'it failed')}."
    r = item.get("result") if isinstance(item.get("result"), Mapping) else {}
    r = r or {}
    if name == "launch_campaign":
        return (
            f"Launched campaign {r.get('name')!s} ({r.get('angle')}, {r.get('tier')}) as "
            f"run {r.get('run_id')} over {r.get('contacts')} prospects; AGT-002 has it."
        )
    if name == "pipeline_snapshot":
        stages = r.get("deals_by_stage") or {}
        listed = ", ".join(f"{_humanise(str(k))} {v.get('deals')} (${v.get('value', 0):,.0f})"
                           for k, v in stages.items()) or "no deals"  # fmt: skip
        runs = ", ".join(f"{k} {v}" for k, v in (r.get("runs") or {}).items()) or "none"
        return (
            f"Pipeline: {listed}. Campaign runs: {runs}. "
            f"{r.get('approvals_pending', 0)} approval items pending."
        )
    if name == "search_knowledge":
        found = [f"[{x.get('domain')}] {x.get('title') or 'untitled'}"
                 for x in r.get("results") or []]  # fmt: skip
        return ("Knowledge Core: " + "; ".join(found) + ".") if found else \
            "The Knowledge Core has nothing on that."  # fmt: skip
    if name == "list_approvals":
        items = [f"{x.get('id')} ({x.get('kind')}: {x.get('summary')})"
                 for x in (r.get("items") or [])[:5]]  # fmt: skip
        return f"{r.get('pending_total', 0)} pending approval items" + (
            ": " + "; ".join(items) + "." if items else "."
        )
    if name == "decide_approval":
        return f"Approval item {r.get('id')} is now {r.get('status')}."
    if name == "ask_content_agent":
        return (
            f"Asked the content agent for a {_humanise(str(r.get('format')))} on "
            f"\u201c{r.get('topic')}\u201d (request {r.get('request_id')}); its draft "
            "will land in the approval queue."
        )
    return f"{name} finished."
