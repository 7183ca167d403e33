"""Offline answers for the two record contracts: ``missing_data`` and ``kc_update_candidate``.

Context shapes: ``missing_data``: ``{"missing_fields": [str], "reason": str?}``;
``kc_update_candidate``: ``{"domain": "KC-xx", "content": str, "confidence": float?}``
(confidence defaults to 0.5). Both restate their context; they exist so every contract has an
offline answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.adapters.offline.common import (
    as_number,
    clip,
    opt_str,
    require,
    require_text,
    string_list,
)
from colony.errors import ValidationFailed


def missing_data(ctx: Mapping[str, Any]) -> dict[str, Any]:
    """The missing fields restated, with a reason."""
    fields = string_list(require(ctx, "missing_fields"), "context.missing_fields")
    if not fields:
        raise ValidationFailed("context.missing_fields is missing")
    reason = opt_str(ctx, "reason") or f"required field(s) missing: {', '.join(fields)}"
    return {"kind": "missing_data", "missing_fields": fields, "reason": clip(reason, 500)}


def kc_update_candidate(ctx: Mapping[str, Any]) -> dict[str, Any]:
    """The candidate restated, confidence 0.5 unless given."""
    confidence = as_number(ctx.get("confidence"))
    return {
        "kind": "kc_update_candidate",
        "domain": require_text(ctx, "domain"),
        "content": clip(require_text(ctx, "content"), 4000),
        "confidence": 0.5 if confidence is None else confidence,
    }
