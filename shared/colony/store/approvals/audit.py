"""The audit log (issue 14): every decision on an approval item, every side effect a
decision caused, and every refused attempt to decide, append-only.

The application role may insert and read (RLS scopes it to the transaction's org) but never
update or delete a row (``store.migrator.ensure_app_role_grants``), so this module has no
statement that changes one. Each function takes the cursor of a transaction opened under the
org: a decision and its effects commit with the decision, or not at all; a refusal is
written in a transaction of its own (the refused attempt rolls back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from colony.store.db import Row, fetch_all, fetch_value

# 'assignment': a change of owner or queue (a reassignment, a leaver's hand-over, an
# escalation; issue 35, migration 0053).
Event = Literal["decision", "effect", "refusal", "assignment"]
Channel = Literal["ui", "link", "chat-confirmed", "system", "sequence", "admin", "slack"]

APPEND = """
INSERT INTO audit_log (org_id, event, approval_item_id, item_kind, actor, channel, action,
                       reason, detail, link_nonce)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)
"""
LINK_USED = "SELECT count(*) FROM audit_log WHERE link_nonce = %s"
RECENT = """
SELECT id, at, event, approval_item_id, item_kind, actor, channel, action, reason, detail
FROM audit_log
WHERE (%s::text IS NULL OR approval_item_id = %s)
  AND (%s::timestamptz IS NULL OR (at, id) < (%s::timestamptz, %s::bigint))
ORDER BY at DESC, id DESC LIMIT %s
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """One audit record. ``actor`` is a person (user id) for decisions and refusals, or the
    decision's actor again for the effects it caused."""

    event: Event
    actor: str
    channel: Channel
    action: str
    approval_item_id: str | None = None
    item_kind: str | None = None
    reason: str | None = None
    detail: Mapping[str, Any] | None = None
    link_nonce: str | None = None


def append(cur: Any, org_id: str, entry: Entry) -> None:
    detail = json.dumps(dict(entry.detail or {}), ensure_ascii=False, default=str)
    cur.execute(
        APPEND,
        (
            org_id,
            entry.event,
            entry.approval_item_id,
            entry.item_kind,
            entry.actor,
            entry.channel,
            entry.action,
            entry.reason,
            detail,
            entry.link_nonce,
        ),
    )


def link_used(cur: Any, nonce: str) -> bool:
    """Whether a decision already spent the approval link with this nonce (in this org)."""
    return int(fetch_value(cur, LINK_USED, (nonce,))) > 0


def recent(
    cur: Any,
    *,
    item_id: str | None = None,
    before: tuple[datetime, int] | None = None,
    limit: int = 50,
) -> list[Row]:
    """The newest ``limit`` entries (of one item, if given), older than ``before`` (a
    previous page's last ``(at, id)``) when paging."""
    at, last_id = before if before is not None else (None, None)
    return fetch_all(cur, RECENT, (item_id, item_id, at, at, last_id, limit))
