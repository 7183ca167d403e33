"""Offline ``outbound_message``: a CONST-006-clean first touch built from one prospect signal.

Context: ``{"contact": {"name", "company", "enrichment", "signals": [{type, detail, date}]},
"angle", "tier", "step", "exemplars": [{"content", "tags": {"angle", "tier", ...}}],
"competitors": [names]}``. The most recent signal (by date, undated last) is the one
referenced: its first sentence opens the body verbatim (competitor names redacted), then one
angle sentence about the decision that signal type forces, for T3-T5 a sentence built from
``enrichment.facilities_count``, and one ask; the subject comes from the signal type (at most
8 words). The exemplar of the same angle (and tier, when there is one) supplies the sign-off;
no exemplar sentence is copied, because exemplars name other prospects and carry their
numbers. The draft is checked with ``colony.policy.outbound.check_outbound`` before it is
returned (a failure is our bug: ``ProviderError``).

Callers route missing data to ``MissingData`` first: a contact without ``name`` or
``signals`` raises ``ValidationFailed`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from colony.adapters.offline.common import (
    as_number,
    clip,
    contact_signals,
    first_name,
    object_list,
    opt_str,
    parse_date,
    require_mapping,
    require_text,
    string_list,
)
from colony.contracts.common import ANGLES
from colony.contracts.outputs import OutboundMessage
from colony.errors import ProviderError, ValidationFailed
from colony.policy.outbound import (
    MAX_SENTENCES,
    check_outbound,
    redact_competitors,
    split_sentences,
)

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
        for s in contact_signals(contact)
        if isinstance(s.get("detail"), str) and s["detail"].strip()
    ]
    if not signals:
        raise ValidationFailed("contact.signals is missing: an outbound message needs a signal")
    order = {id(s): i for i, s in enumerate(signals)}
    return min(
        signals,
        key=lambda s: (
            -(parse_date(s.get("date")) or date.min).toordinal(),
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


def outbound_message(ctx: Mapping[str, Any]) -> dict[str, Any]:
    """A first touch on the newest signal, checked against CONST-006."""
    contact = require_mapping(ctx, "contact")
    name = opt_str(contact, "name")
    if not name:
        raise ValidationFailed("contact.name is missing: an outbound message needs a name")
    angle = require_text(ctx, "angle")
    tier = require_text(ctx, "tier")
    if angle not in ANGLES:
        raise ValidationFailed(f"context.angle {angle!r} is not one of {ANGLES}")
    if tier not in MAX_SENTENCES:
        raise ValidationFailed(f"context.tier {tier!r} is not one of {tuple(MAX_SENTENCES)}")
    step = ctx.get("step", 1)
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise ValidationFailed("context.step must be a positive integer")
    competitors = string_list(ctx.get("competitors"), "context.competitors")
    exemplars = object_list(ctx, "exemplars")
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
            as_number(enrichment.get("facilities_count"))
            if isinstance(enrichment, Mapping)
            else None
        )
        company = opt_str(contact, "company")
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
    body = f"Hi {first_name(name)},\n\n{' '.join(sentences)}\n\n{_sender(exemplar, tier)}"
    message = OutboundMessage.model_validate(
        {
            "subject": subject,
            "body": body,
            "angle_used": angle,
            "signal_referenced": clip(detail, 400),
        }
    )
    details = [
        " ".join(str(s["detail"]).split())
        for s in contact_signals(contact)
        if isinstance(s.get("detail"), str) and s["detail"].strip()
    ]
    problems = check_outbound(message, tier=tier, contact_signals=details, competitors=competitors)
    if problems:
        raise ProviderError(f"offline outbound draft broke CONST-006: {'; '.join(problems)}")
    return message.model_dump()
