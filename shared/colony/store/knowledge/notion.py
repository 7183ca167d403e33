"""What the Notion webhook reads and writes itself: verification tokens, and whether the
Knowledge Core (ENT-007) holds chunks of a page.

Kept here, not in ``colony.knowledge``, so the webhook's bundle stays model-free: it needs one
existence check on ``kc_chunks``, not the embedding store. Chunks are written only by
``colony.knowledge.store``.

``add_verification`` takes a cursor of ``Database.transaction(None)``: a handshake token
becomes the signing secret and no org owns it, so RLS cannot scope it. The application role
can neither read a token back nor insert one directly: it calls
``record_notion_verification`` (migration 0014), which stores at most ``per_window`` per
window and keeps only the newest ``keep`` rows, because anyone may send a handshake. The
operator reads the tokens as the owner role. ``has_chunks`` takes a cursor of
``Database.transaction(org_id)``, so RLS scopes it to the integration's org.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from colony.store.db import fetch_one, fetch_value

ADD_VERIFICATION = "SELECT record_notion_verification(%s, %s, %s, %s, %s)"
HAS_CHUNKS = "SELECT 1 FROM kc_chunks WHERE source = 'notion' AND source_id = %s LIMIT 1"


def add_verification(
    cur: Any, token: str, at: datetime, *, per_window: int, window_seconds: int, keep: int
) -> bool:
    """Keep the handshake's token for the operator, received ``at``; False (nothing
    stored) when ``per_window`` handshakes already came in the ``window_seconds`` before."""
    params = (token, at, per_window, window_seconds, keep)
    return bool(fetch_value(cur, ADD_VERIFICATION, params))


def has_chunks(cur: Any, page_id: str) -> bool:
    """Whether the Knowledge Core holds chunks of Notion page ``page_id``."""
    return fetch_one(cur, HAS_CHUNKS, (page_id,)) is not None
