"""What the Notion webhook reads and writes itself: verification tokens, and whether the
Knowledge Core (ENT-007) holds chunks of a page.

Kept here, not in ``colony.knowledge``, so the webhook's bundle stays model-free: it needs one
existence check on ``kc_chunks``, not the embedding store. Chunks are written only by
``colony.knowledge.store``.

``add_verification`` takes a cursor of ``Database.transaction(None)``: a handshake token
becomes the signing secret and no org owns it, so RLS cannot scope it. The application role
may INSERT a token but never read one back (hence no RETURNING); the operator reads it as the
owner role. ``has_chunks`` takes a cursor of ``Database.transaction(org_id)``, so RLS scopes
it to the integration's org.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import fetch_one

ADD_VERIFICATION = "INSERT INTO notion_verifications (verification_token) VALUES (%s)"
HAS_CHUNKS = "SELECT 1 FROM kc_chunks WHERE source = 'notion' AND source_id = %s LIMIT 1"


def add_verification(cur: Any, token: str) -> None:
    """Keep the handshake's token for the operator."""
    cur.execute(ADD_VERIFICATION, (token,))


def has_chunks(cur: Any, page_id: str) -> bool:
    """Whether the Knowledge Core holds chunks of Notion page ``page_id``."""
    return fetch_one(cur, HAS_CHUNKS, (page_id,)) is not None
