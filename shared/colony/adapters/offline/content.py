"""Offline answers that lay out KC material: ``content_piece`` and ``deployment_kit``.

Both read only the rendered prompt (``colony.adapters.offline.prompt``); a prompt without a
block the answer needs raises ``ValidationFailed`` naming it.

- ``content_piece``: "Write a {format} about:" and the ``topic`` block of the task, the
  ``competitors`` block and the KC blocks. The exemplar sentences that best overlap the topic,
  in source order, laid out for the format (linkedin_post, blog_post, one_pager,
  email_newsletter). Extractive on purpose: every sentence of the piece comes from the
  retrieved material, and none that names a listed competitor.
- ``deployment_kit``: the ``deal`` entity (``name``, ``stage``, ``value``, ``next_action``,
  ``close_date``) and the KC blocks: a deal summary section, then one section per playbook.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from colony.adapters.offline.common import (
    as_number,
    clip,
    humanise,
    opt_str,
    prose_sentences,
    split_exemplar,
    string_list,
)
from colony.adapters.offline.prompt import Block, Prompt, PromptLacks
from colony.errors import ValidationFailed
from colony.policy.outbound import competitor_mentions, key_tokens

CONTENT_FORMATS = ("linkedin_post", "blog_post", "one_pager", "email_newsletter")

# -- content_piece -----------------------------------------------------------------------------

_PIECE_SIZES = {"linkedin_post": 4, "email_newsletter": 6, "one_pager": 8, "blog_post": 12}


_WRITE = re.compile(r"^Write a (\S+) about:", re.MULTILINE)


def _items(blocks: list[Block]) -> list[Mapping[str, Any]]:
    """KC blocks as the exemplar helpers read them (title attribute, text)."""
    return [{"title": b.get("title"), "content": b.text} for b in blocks]


def content_piece(prompt: Prompt) -> dict[str, Any]:
    """The exemplar sentences closest to the topic, laid out for the format."""
    topic = " ".join((prompt.field_text("topic") or "").split())
    if not topic:
        raise ValidationFailed("the prompt has no topic block")
    asked = _WRITE.search(prompt.task)
    if not asked:
        raise ValidationFailed("the task states no format (Write a … about:)")
    piece_format = asked.group(1)
    if piece_format not in CONTENT_FORMATS:
        raise ValidationFailed(f"format {piece_format!r} is not one of {CONTENT_FORMATS}")
    exemplars = _items(prompt.exemplars())
    if not exemplars:
        raise ValidationFailed("the prompt has no KC exemplars: a content piece is extractive")
    listed = prompt.field_json("competitors")
    if listed is None:
        raise ValidationFailed("the prompt has no competitors block")
    competitors = string_list(listed, "the competitors block")
    topic_tokens = key_tokens(topic)
    candidates: list[tuple[int, int, int, str, str | None]] = []  # (score, src, pos, text, title)
    for index, item in enumerate(exemplars):
        title, body = split_exemplar(item, index, "exemplars")
        for position, sentence in enumerate(prose_sentences(body)):
            if len(sentence.split()) < 5 or competitor_mentions(sentence, competitors):
                continue
            score = len(key_tokens(sentence) & topic_tokens)
            candidates.append((score, index, position, sentence, title))
    if not candidates:
        raise ValidationFailed("the KC exemplars have no usable prose for a content piece")
    chosen = sorted(candidates, key=lambda c: (-c[0], c[1], c[2]))[: _PIECE_SIZES[piece_format]]
    chosen.sort(key=lambda c: (c[1], c[2]))
    title = clip(topic, 200)
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
    return {"title": title, "format": piece_format, "body": clip(body, 8000)}


# -- deployment_kit ----------------------------------------------------------------------------


def deployment_kit(prompt: Prompt) -> dict[str, Any]:
    """A deal summary section, then one section per playbook."""
    deal = prompt.entity("deal")
    deal_name = opt_str(deal, "name") if isinstance(deal, Mapping) else None
    if not deal_name:
        raise PromptLacks("deal.name")
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
        if key == "value" and as_number(value) is not None:
            value = f"${int(as_number(value) or 0):,}"
        elif key == "stage":
            value = humanise(str(value))
        facts.append(f"{label}: {str(value).strip().rstrip('.')}.")
    sections = [{"heading": "Deal summary", "body": clip(" ".join(facts), 4000)}]
    for index, item in enumerate(_items(prompt.exemplars())):
        title, body = split_exemplar(item, index, "exemplars")
        body = re.sub(r"\A#\s+[^\n]*\n+", "", body).strip() or body
        sections.append(
            {"heading": clip(title or f"Playbook {index + 1}", 200), "body": clip(body, 4000)}
        )
    return {"title": clip(f"Deployment kit: {deal_name}", 200), "sections": sections}
