"""Offline answers for the two record contracts: ``missing_data`` and ``kc_update_candidate``.

Both read task values from the rendered prompt (``Prompt.value``: a field's own block or the
task block): ``missing_data``: ``missing_fields`` ([str]) and ``reason`` (optional);
``kc_update_candidate``: ``domain`` ("KC-xx"), ``content`` and ``confidence`` (optional,
0.5 by default). Both restate what the prompt asks; no flow calls them today, they exist so
every contract has an offline answer.
"""

from __future__ import annotations

from typing import Any

from colony.adapters.offline.common import as_number, clip, string_list
from colony.adapters.offline.prompt import Prompt
from colony.errors import ValidationFailed


def _text(prompt: Prompt, name: str) -> str | None:
    value = prompt.value(name)
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


def missing_data(prompt: Prompt) -> dict[str, Any]:
    """The missing fields restated, with a reason."""
    fields = string_list(prompt.value("missing_fields"), "missing_fields")
    if not fields:
        raise ValidationFailed("the prompt names no missing_fields")
    reason = _text(prompt, "reason") or f"required field(s) missing: {', '.join(fields)}"
    return {"kind": "missing_data", "missing_fields": fields, "reason": clip(reason, 500)}


def kc_update_candidate(prompt: Prompt) -> dict[str, Any]:
    """The candidate restated, confidence 0.5 unless given."""
    domain, content = _text(prompt, "domain"), _text(prompt, "content")
    if not domain:
        raise ValidationFailed("the prompt names no domain")
    if not content:
        raise ValidationFailed("the prompt has no content")
    confidence = as_number(prompt.value("confidence"))
    return {
        "kind": "kc_update_candidate",
        "domain": domain,
        "content": clip(content, 4000),
        "confidence": 0.5 if confidence is None else confidence,
    }
