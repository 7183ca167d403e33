"""Published content: the marketing pieces (AGT-008) whose ``content_piece`` approval item
(ENT-011) was approved, one row per item.

Takes the cursor of the approving transaction (``Database.transaction(org_id)``, RLS-scoped),
so a piece is published in the same commit as its decision. Publishing is idempotent
(``ON CONFLICT (org_id, approval_item_id) DO NOTHING``): applying an approval twice publishes once.
The daily brief counts these rows (``colony.store.insights.briefs``).
"""

from __future__ import annotations

from typing import Any

PUBLISH = """
INSERT INTO published_content (org_id, approval_item_id, title, format, body)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT (org_id, approval_item_id) DO NOTHING
"""


def publish(
    cur: Any, org_id: str, item_id: str, *, title: str, piece_format: str, body: str
) -> None:
    """The approved piece of ``item_id`` is published (once)."""
    cur.execute(PUBLISH, (org_id, item_id, title, piece_format, body))
