"""Compact, field-selected JSON for entities in prompts (seed §7.3).

Only fields an LLM can use: no audit columns, timestamps or internal ids (beyond the entity's
own ``id``/``external_id``), and no nulls or empties. Fields in ``NON_ESSENTIAL`` are kept
only while there is budget for them: the assembler strips them first under pressure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

AUDIT_FIELDS = frozenset(
    {
        "created_at",
        "updated_at",
        "decided_at",
        "processed_at",
        "applied_at",
        "started_at",
        "finished_at",
        "org_id",
        "content_hash",
        "embedding",
        "embedding_model",
        "tags_raw",
    }
)
NON_ESSENTIAL = frozenset(
    {"raw_enrichment_html", "transcript_text", "transcript", "raw_html", "page_html"}
)
KEEP_IDS = frozenset({"id", "external_id"})


def _scalar(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value) if value % 1 else int(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def compact(value: Any, *, strip: frozenset[str] = frozenset()) -> Any:
    """Drop audit fields, foreign/internal ids, ``strip``-ed fields, nulls and empties."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if key in AUDIT_FIELDS or key in strip:
                continue
            if key.endswith("_id") and key not in KEEP_IDS:
                continue
            item = compact(item, strip=strip)
            if item is None or item == "" or item == [] or item == {}:
                continue
            out[key] = item
        return out
    if isinstance(value, list | tuple):
        items = [compact(v, strip=strip) for v in value]
        return [v for v in items if v is not None and v != "" and v != [] and v != {}]
    return _scalar(value)


def dumps(value: Any) -> str:
    """Minimal JSON: no spaces, UTF-8 kept, deterministic key order as given."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def naive_dumps(value: Any) -> str:
    """What an ORM row dump looks like: every column, indented (the density baseline)."""
    return json.dumps(value, indent=2, ensure_ascii=True, default=str)
