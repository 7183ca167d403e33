"""Which KC domain a Notion page belongs to: what the webhook and the re-embed worker share.

Imports nothing heavy: the model-free webhook imports it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.webhooks import compact_id


def domain_for(mapping: Mapping[str, str], page_id: str, parent_id: Any) -> str | None:
    """The KC domain configured for the page itself, else for its parent database/page."""
    if page_id in mapping:
        return mapping[page_id]
    if isinstance(parent_id, str):
        return mapping.get(compact_id(parent_id))
    return None
