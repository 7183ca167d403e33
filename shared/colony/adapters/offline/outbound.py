"""Offline ``outbound_message``: a CONST-006-clean step of a sequence built from one prospect
signal, as the step's channel and guidance ask.

It reads only the rendered prompt (``colony.adapters.offline.prompt``): the ``contact``
entity and its ``signals`` entity (the stored ones; else the contact's own list), the
``thread`` entity (what the contact already got), "Angle: … | Tier: … | Sequence step: … |
Channel: …" and the step guidance line in the task, the ``competitors`` block and the KC
exemplar blocks (their ``tags`` attribute says angle and tier).

The most recent signal (by date, undated last) that the thread has not already used is the
one referenced (the most recent of all when every one was used): its first sentence opens the
body verbatim (competitor names redacted), then one angle sentence about the decision that
signal type forces, for T3-T5 a sentence built from ``enrichment.facilities_count``, and one
ask. A phrase the step guidance quotes ("…") is the ask, said verbatim; else the angle's own.
The channel decides the form: an email greets the contact and signs off (the exemplar of the
same angle, and tier when there is one, supplies the sign-off; no exemplar sentence is
copied, because exemplars name other prospects and carry their numbers); a LinkedIn note is
the opener and the ask; a call is talking points, one per line, with no greeting. The
subject comes from the signal type (at most 8 words), named for the channel. The draft is
checked with ``colony.policy.outbound.check_outbound`` before it is returned (a failure is
our bug: ``ProviderError``; a quoted ask that would break it is not used).

Callers route missing data to ``MissingData`` first: a contact without ``name`` or
``signals`` raises ``ValidationFailed`` naming the field, as does a prompt without the
contact entity, the angle line or the competitors block.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from colony.adapters.offline.common import (
    as_number,
    clip,
    first_name,
    known_signals,
    opt_str,
    signal_date,
    string_list,
)
from colony.adapters.offline.prompt import Block, Prompt, PromptLacks
from colony.contracts.common import ANGLES
from colony.contracts.outputs.campaigns import OutboundMessage
from colony.errors import ProviderError, ValidationFailed
from colony.policy.outbound import (
    MAX_SENTENCES,
    check_outbound,
    competitor_mentions,
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


def _pick_signal(known: list[Mapping[str, Any]], said: str = "") -> Mapping[str, Any]:
    """The newest signal the thread (``said``: its texts) has not used; else the newest."""
    signals = [s for s in known if isinstance(s.get("detail"), str) and s["detail"].strip()]
    if not signals:
        raise PromptLacks("contact.signals")
    order = {id(s): i for i, s in enumerate(signals)}
    fresh = [s for s in signals if _first_sentence(s) not in said] or signals
    return min(
        fresh,
        key=lambda s: (
            -(signal_date(s) or date.min).toordinal(),
            order[id(s)],
        ),
    )


def _first_sentence(signal: Mapping[str, Any]) -> str:
    return split_sentences(" ".join(str(signal["detail"]).split()))[0].rstrip(".!?")


def _said(thread: Any) -> str:
    """What the contact already got, as one text (the ``thread`` entity's subjects and texts)."""
    steps = thread if isinstance(thread, list) else []
    return " ".join(
        " ".join(str(step.get(k) or "") for k in ("subject", "text"))
        for step in steps
        if isinstance(step, Mapping)
    )


def _quoted_ask(guidance: str, competitors: list[str]) -> str | None:
    """The phrase the step's guidance quotes, as a sentence (None: it quotes none)."""
    match = _QUOTE.search(guidance)
    if not match:
        return None
    ask = " ".join(match.group(1).split())
    if competitor_mentions(ask, competitors):
        return None
    return ask if ask[-1] in ".?!" else ask + "."


def _pick_exemplar(exemplars: list[Block], angle: str, tier: str) -> Block | None:
    for wanted in ((angle, tier), (angle, None)):
        for item in exemplars:
            if item.tags.get("angle") == wanted[0] and (
                wanted[1] is None or item.tags.get("tier") == wanted[1]
            ):
                return item
    return exemplars[0] if exemplars else None


def _sender(exemplar: Block | None, tier: str) -> str:
    name = "The ZoomProp Team"
    if exemplar is not None:
        lines = [line.strip() for line in exemplar.text.strip().splitlines() if line.strip()]
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


_SLOT = re.compile(
    r"^Angle: (\S+)\s+\|\s+Tier: (\S+)\s+\|\s+Sequence step: (\S+)"
    r"(?:\s+\|\s+Channel: (\S+))?$",
    re.M,
)
_GUIDANCE = re.compile(r"as its guidance \(the org's sequence library\) says: (.*)$", re.M)
_QUOTE = re.compile(r"[\"\u201c]([^\"\u201c\u201d]{3,200})[\"\u201d]")
CHANNELS = ("email", "linkedin", "call")


@dataclass(frozen=True)
class _Slot:
    """What the task line says: angle, tier, step and channel (email when it names none)."""

    angle: str
    tier: str
    step: int
    channel: str


def _slot(task: str) -> _Slot:
    slot = _SLOT.search(task)
    if not slot:
        raise ValidationFailed("the task states no angle, tier and step")
    angle, tier, step_text, channel = slot.groups()
    if angle not in ANGLES:
        raise ValidationFailed(f"angle {angle!r} is not one of {ANGLES}")
    if tier not in MAX_SENTENCES:
        raise ValidationFailed(f"tier {tier!r} is not one of {tuple(MAX_SENTENCES)}")
    step = int(step_text) if step_text.isdigit() else 0
    if step < 1:
        raise ValidationFailed("the sequence step must be a positive integer")
    if (channel or "email") not in CHANNELS:
        raise ValidationFailed(f"channel {channel!r} is not one of {CHANNELS}")
    return _Slot(angle, tier, step, channel or "email")


def outbound_message(prompt: Prompt) -> dict[str, Any]:
    """One step on the newest signal not used yet, checked against CONST-006."""
    contact = prompt.entity("contact")
    if not isinstance(contact, Mapping):
        raise ValidationFailed("the contact entity must be an object")
    name = opt_str(contact, "name")
    if not name:
        raise PromptLacks("contact.name")
    slot = _slot(prompt.task)
    listed = prompt.field_json("competitors")
    if listed is None:
        raise ValidationFailed("the prompt has no competitors block")
    competitors = string_list(listed, "the competitors block")
    guidance = _GUIDANCE.search(prompt.task)
    known = known_signals(prompt.optional_entity("signals"), contact)
    signal = _pick_signal(known, _said(prompt.optional_entity("thread")))
    detail = " ".join(str(signal["detail"]).split())
    details = [
        " ".join(str(s["detail"]).split())
        for s in known
        if isinstance(s.get("detail"), str) and s["detail"].strip()
    ]
    quoted = _quoted_ask(guidance.group(1), competitors) if guidance else None
    exemplar = _pick_exemplar(prompt.exemplars(), slot.angle, slot.tier)
    problems: list[str] = []
    for ask in dict.fromkeys((quoted, _ASKS[slot.angle])):
        if ask is None:
            continue
        subject, body = _compose(slot, contact, name, signal, ask, competitors, exemplar)
        message = OutboundMessage.model_validate(
            {
                "subject": subject,
                "body": body,
                "angle_used": slot.angle,
                "signal_referenced": clip(detail, 400),
            }
        )
        problems = check_outbound(
            message, tier=slot.tier, contact_signals=details, competitors=competitors
        )
        if not problems:
            return message.model_dump()
    raise ProviderError(f"offline outbound draft broke CONST-006: {'; '.join(problems)}")


def _compose(
    slot: _Slot,
    contact: Mapping[str, Any],
    name: str,
    signal: Mapping[str, Any],
    ask: str,
    competitors: list[str],
    exemplar: Block | None,
) -> tuple[str, str]:
    """(subject, body) of the step in its channel's form (see the module docstring)."""
    detail = " ".join(str(signal["detail"]).split())
    signal_type = str(signal.get("type") or "")
    decision = _DECISIONS.get(signal_type, _GENERIC_DECISION)
    opener = redact_competitors(split_sentences(detail)[0], competitors, "another vendor")
    if opener[-1] not in ".!?":
        opener += "."
    if slot.step > 1 and slot.channel != "call":
        opener = f"Following up on one detail from my last note: {opener}"
    sentences = [opener]
    if slot.channel != "linkedin":  # a LinkedIn note is the opener and the ask
        sentences.append(_ANGLE_LINES[slot.angle].format(decision=decision))
    if MAX_SENTENCES[slot.tier] > 3 and slot.channel != "linkedin":
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
    sentences.append(ask)
    sentences = [redact_competitors(s, competitors, "another vendor") for s in sentences]
    topic = _SUBJECTS.get(signal_type, "A question about your clinic space")
    lowered = f"{topic[0].lower()}{topic[1:]}"
    if slot.channel == "call":
        return f"Call: {lowered}", "\n".join(f"- {s}" for s in sentences)
    if slot.channel == "linkedin":
        return f"LinkedIn: {lowered}", f"Hi {first_name(name)}, {' '.join(sentences)}"
    subject = topic
    if slot.step > 1 and len(topic.split()) <= 6:
        subject = f"Following up: {lowered}"
    body = f"Hi {first_name(name)},\n\n{' '.join(sentences)}\n\n{_sender(exemplar, slot.tier)}"
    return subject, body
