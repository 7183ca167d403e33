"""Value access and text helpers shared by the offline model's answer modules.

Value access (over what ``prompt.parse`` read from the prompt's blocks) is strict on
purpose: a missing key is ``PromptLacks`` naming it (``icp_rubric.size is missing``), which
the model answers as ``missing_data`` (CONST-004), so a prompt that lost a field surfaces
rather than as a plausible-looking answer built from nothing. The text helpers are the few
transformations every answer shares: clipping at a word boundary, flattening to one
sentence, reading the exemplar items the retriever hands over (front matter, title, prose
sentences).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from colony.adapters.offline.prompt import PromptLacks
from colony.errors import ValidationFailed
from colony.policy.outbound import split_sentences

# -- value access ------------------------------------------------------------------------------


def require(ctx: Mapping[str, Any], key: str, where: str = "context") -> Any:
    value = ctx.get(key)
    if value is None or (isinstance(value, str | list | tuple | dict) and not value):
        raise PromptLacks(f"{where}.{key}")
    return value


def require_mapping(ctx: Mapping[str, Any], key: str, where: str = "context") -> Mapping[str, Any]:
    value = require(ctx, key, where)
    if not isinstance(value, Mapping):
        raise ValidationFailed(f"{where}.{key} must be an object")
    return value


def require_text(ctx: Mapping[str, Any], key: str, where: str = "context") -> str:
    value = require(ctx, key, where)
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed(f"{where}.{key} must be a non-empty string")
    return value


def object_list(
    ctx: Mapping[str, Any], key: str, where: str = "context"
) -> list[Mapping[str, Any]]:
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


def string_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationFailed(f"{where} must be a list of strings")
    return [item for item in value if isinstance(item, str) and item.strip()]


def opt_str(ctx: Mapping[str, Any], key: str) -> str | None:
    value = ctx.get(key)
    if isinstance(value, str) and value.strip():
        return " ".join(value.split())
    return None


def as_number(value: Any) -> float | None:
    """A finite real number (int, float or Decimal, as SQL aggregates return), else None."""
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def parse_date(value: Any) -> date | None:
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


# -- text helpers ------------------------------------------------------------------------------


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary with an ellipsis when cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-") + "…"


def flatten(text: str) -> str:
    """One sentence: whitespace collapsed, inner sentence ends turned into semicolons."""
    parts = [p.strip().rstrip(".!?…").strip() for p in split_sentences(" ".join(text.split()))]
    return "; ".join(p for p in parts if p)


def one_sentence(text: str, limit: int) -> str:
    """A flattened sentence clipped without an ellipsis (which would count as a boundary)."""
    flat = flatten(text)
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    return (cut[: cut.rindex(" ")] if " " in cut else cut).rstrip(" ,;:-")


def first_name(name: str) -> str:
    words = name.split()
    if len(words) >= 2 and words[0].rstrip(".").casefold() in {"dr", "mr", "mrs", "ms", "prof"}:
        return f"{words[0]} {words[-1]}"
    return words[0]


def humanise(code: str) -> str:
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


def split_exemplar(item: Mapping[str, Any], index: int, where: str) -> tuple[str | None, str]:
    """(title, body without front matter) of an exemplar item."""
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValidationFailed(f"{where}[{index}].content is missing")
    meta, body = _split_front_matter(content)
    return _exemplar_title(item, body, meta), body.strip()


def prose_sentences(markdown: str) -> list[str]:
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


def contact_signals(contact: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The contact's signals that are objects; a missing or malformed list reads as none."""
    signals = contact.get("signals")
    if isinstance(signals, str) or not isinstance(signals, Sequence):
        return []
    return [s for s in signals if isinstance(s, Mapping)]


def known_signals(entity: Any, contact: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The signals a prompt carries: its ``signals`` entity (the contact's stored signals,
    strongest first, as the assembler kept them) when it has one, else the ``contact``
    entity's own list."""
    if entity is None:
        return contact_signals(contact)
    return contact_signals({"signals": entity})


def signal_date(signal: Mapping[str, Any]) -> date | None:
    """The day a signal was observed (``observed_on``, or a contact list's ``date``)."""
    return parse_date(signal.get("observed_on") or signal.get("date"))
