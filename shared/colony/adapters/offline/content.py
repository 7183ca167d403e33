"""Offline answers that lay out KC material: ``content_piece`` and ``deployment_kit``.

Context shapes (callers build exactly these; a missing required key raises
``ValidationFailed`` naming it):

- ``content_piece``: ``{"topic": str, "format": linkedin_post | blog_post | one_pager |
  email_newsletter, "exemplars": [{"title"?, "content"}], "competitors": [names]?}``. The
  exemplar sentences that best overlap the topic, in source order, laid out for the format.
  Extractive on purpose: every sentence of the piece comes from the retrieved material.
- ``deployment_kit``: ``{"deal": {"name", "stage"?, "value"?, "next_action"?, "close_date"?},
  "exemplars": [{"title", "content"}]}``. A deal summary section, then one section per
  playbook.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from colony.adapters.offline.common import (
    as_number,
    clip,
    humanise,
    object_list,
    prose_sentences,
    require_mapping,
    require_text,
    split_exemplar,
    string_list,
)
from colony.errors import ValidationFailed
from colony.policy.outbound import competitor_mentions, key_tokens

CONTENT_FORMATS = ("linkedin_post", "blog_post", "one_pager", "email_newsletter")

# -- content_piece -----------------------------------------------------------------------------

_PIECE_SIZES = {"linkedin_post": 4, "email_newsletter": 6, "one_pager": 8, "blog_post": 12}


def content_piece(ctx: Mapping[str, Any]) -> dict[str, Any]:
    """The exemplar sentences closest to the topic, laid out for the format."""
    topic = " ".join(require_text(ctx, "topic").split())
    piece_format = require_text(ctx, "format")
    if piece_format not in CONTENT_FORMATS:
        raise ValidationFailed(f"context.format {piece_format!r} is not one of {CONTENT_FORMATS}")
    exemplars = object_list(ctx, "exemplars")
    if not exemplars:
        raise ValidationFailed("context.exemplars is missing: a content piece is extractive")
    competitors = string_list(ctx.get("competitors"), "context.competitors")
    topic_tokens = key_tokens(topic)
    candidates: list[tuple[int, int, int, str, str | None]] = []  # (score, src, pos, text, title)
    for index, item in enumerate(exemplars):
        title, body = split_exemplar(item, index, "context.exemplars")
        for position, sentence in enumerate(prose_sentences(body)):
            if len(sentence.split()) < 5 or competitor_mentions(sentence, competitors):
                continue
            score = len(key_tokens(sentence) & topic_tokens)
            candidates.append((score, index, position, sentence, title))
    if not candidates:
        raise ValidationFailed("context.exemplars has no usable prose for a content piece")
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


def deployment_kit(ctx: Mapping[str, Any]) -> dict[str, Any]:
    """A deal summary section, then one section per playbook."""
    deal = require_mapping(ctx, "deal")
    deal_name = require_text(deal, "name", "deal")
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
    for index, item in enumerate(object_list(ctx, "exemplars")):
        title, body = split_exemplar(item, index, "context.exemplars")
        body = re.sub(r"\A#\s+[^\n]*\n+", "", body).strip() or body
        sections.append(
            {"heading": clip(title or f"Playbook {index + 1}", 200), "body": clip(body, 4000)}
        )
    return {"title": clip(f"Deployment kit: {deal_name}", 200), "sections": sections}
