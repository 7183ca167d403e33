"""Deployment kits: AGT-009's onboarding document for a closed-won deal (ENT-003), one per
deal, released to the customer by its ``deployment_kit`` approval item (ENT-011).

Every function takes the cursor of a transaction opened under the kit's org
(``Database.transaction(org_id)``), so RLS scopes each statement. The document itself lives
in the assets bucket; the row keeps its object name (a signed link is made from it each time
a person sees the item) and the ``gs://`` URI, and its text (migration 0036), so approving
the kit can add it to KC-10 inside the decision's transaction without reading the bucket.
A caller adding a kit holds the deal's lock (``colony.store.deals.deals.lock``) and checks
``of_deal`` under it, so racing deliveries add one.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_one, fetch_value

OF_DEAL = """
SELECT id, approval_item_id, object_name, gcs_uri, title, status FROM deployment_kits
WHERE deal_id = %s
"""
ADD = """
INSERT INTO deployment_kits (org_id, deal_id, approval_item_id, title, object_name, gcs_uri,
                             document)
VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id
"""
OF_ITEM = """
SELECT id, deal_id, title, document FROM deployment_kits WHERE approval_item_id = %s
"""
RELEASE = """
UPDATE deployment_kits SET status = 'released', released_at = COALESCE(released_at, now())
WHERE approval_item_id = %s
"""


def of_deal(cur: Any, deal_id: str) -> Row | None:
    """The deal's kit (None: none built yet)."""
    return fetch_one(cur, OF_DEAL, (deal_id,))


def add(
    cur: Any,
    org_id: str,
    deal_id: str,
    item_id: str,
    *,
    title: str,
    object_name: str,
    gcs_uri: str,
    document: str,
) -> str:
    """Record the deal's kit (``document``: the text put in the bucket) and the approval item
    that releases it; returns the kit's id."""
    params = (org_id, deal_id, item_id, title, object_name, gcs_uri, document)
    return str(fetch_value(cur, ADD, params))


def of_item(cur: Any, item_id: str) -> Row | None:
    """The kit approval item ``item_id`` releases: ``id, deal_id, title, document`` (the
    document is None for a kit built before it was kept; None: no such kit)."""
    return fetch_one(cur, OF_ITEM, (item_id,))


def release(cur: Any, item_id: str) -> bool:
    """Release the kit of approval item ``item_id`` (released once, stays released); False if
    the item has no kit in this org."""
    cur.execute(RELEASE, (item_id,))
    return bool(cur.rowcount == 1)
