"""Notion workspaces an org connected, and the backfill / reconciliation runs over them.

A workspace belongs to one org: the key is (org, workspace) so that the table can be
distributed by org (migration 0033), so a claim takes the workspace's lock and looks, through
the ``notion_route`` policy, for another org's row before it inserts (``connect``);
the row keeps the Secret Manager name of its token, never the token, and its KC mapping
(Notion database or page id → KC-01..07). ``notion_syncs`` is the durable state of one run:
which mapped id it is at (``position``), the Notion cursor inside it, and the step number
the next task must carry (a task naming any other step is stale and does nothing). A
workspace its stored token no longer proves is released (``release``: the row deleted).

Cursors come from ``Database.transaction(org_id)`` (RLS scopes every query) except
``route``'s, a ``transaction(None)`` cursor: the webhook knows only the event's workspace, so
it names that workspace (``app.notion_workspace``, transaction-local) and migration 0020's
read-only ``notion_route`` policy shows it that one row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

NAME_WORKSPACE = "SELECT set_config('app.notion_workspace', %s, true)"
ROUTE = """
SELECT org_id, domains FROM notion_workspaces WHERE workspace_id = %s AND status = 'connected'
"""
# Claims of one workspace take turns (the lock is held to the end of the transaction), and
# each sees the rows the one before it committed: the route setting shows every org's row of
# this one workspace to the NOT EXISTS, and is cleared right after (UNSCOPE), so nothing
# later in the transaction sees them.
CLAIM_LOCK = """
SELECT pg_advisory_xact_lock(hashtextextended('notion_workspace' || chr(10) || %s, 0)),
       set_config('app.notion_workspace', %s, true)
"""
CLAIM = """
INSERT INTO notion_workspaces (workspace_id, org_id, secret_name, domains)
SELECT %s, %s, %s, %s::jsonb
WHERE NOT EXISTS (SELECT 1 FROM notion_workspaces WHERE workspace_id = %s AND org_id <> %s)
ON CONFLICT (org_id, workspace_id) DO NOTHING
RETURNING workspace_id
"""
UNSCOPE = "SELECT set_config('app.notion_workspace', '', true)"
RECONNECT = """
UPDATE notion_workspaces SET secret_name = %s, domains = %s::jsonb, status = 'connected',
    updated_at = now()
WHERE workspace_id = %s
RETURNING workspace_id
"""
# A workspace its stored token no longer proves (the daily re-proof, issue 31) is released
# by deleting its row, its runs with it (notion_syncs cascades), not by setting status to
# 'disconnected'. The claim's NOT EXISTS counts every row of another org, disconnected ones
# too, and it must: were it to skip them, the squatter's own row would stay behind, and a
# later connect of the squatter would find it (ON CONFLICT) and RECONNECT would turn it back
# to 'connected' beside the rightful org's row, two orgs routed one workspace. A deleted row
# leaves one rule everywhere (any row of another org holds the workspace); what it was stays
# on the org's audit log, which the release writes first.
RELEASE = "DELETE FROM notion_workspaces WHERE workspace_id = %s"
GET = """
SELECT workspace_id, org_id, secret_name, domains, status, connected_at, updated_at
FROM notion_workspaces WHERE workspace_id = %s
"""
LIST = """
SELECT workspace_id, domains, status, connected_at, updated_at FROM notion_workspaces
WHERE status = 'connected' OR %s ORDER BY workspace_id
"""
SECRET_NAMES = "SELECT secret_name FROM notion_workspaces ORDER BY workspace_id"
START_SYNC = """
INSERT INTO notion_syncs (id, org_id, workspace_id, kind, targets)
VALUES (%s, %s, %s, %s, %s::jsonb)
ON CONFLICT (org_id, id) DO NOTHING
"""
SYNC = """
SELECT id, workspace_id, kind, targets, position, cursor, step, status, pages_seen,
    pages_synced, pages_skipped, rate_limited, started_at, updated_at, finished_at
FROM notion_syncs WHERE id = %s
"""
SYNCS = """
SELECT id, workspace_id, kind, position, step, status, pages_seen, pages_synced,
    pages_skipped, rate_limited, started_at, finished_at
FROM notion_syncs ORDER BY started_at DESC, id LIMIT %s
"""
# The checkpoint: only the task carrying the current step may advance it (a duplicate or a
# stale task matches no row), and it advances by one, atomically with its counts.
ADVANCE = """
UPDATE notion_syncs SET position = %s, cursor = %s, step = step + 1,
    pages_seen = pages_seen + %s, pages_synced = pages_synced + %s,
    pages_skipped = pages_skipped + %s,
    status = CASE WHEN %s THEN 'done' ELSE 'running' END,
    finished_at = CASE WHEN %s THEN now() ELSE NULL END, updated_at = now()
WHERE id = %s AND step = %s AND status = 'running'
RETURNING step
"""
RATE_LIMITED = """
UPDATE notion_syncs SET rate_limited = rate_limited + 1, updated_at = now()
WHERE id = %s AND step = %s AND status = 'running'
RETURNING rate_limited
"""
EDITED = """
SELECT source_id, max(tags->>'edited') AS edited FROM kc_chunks
WHERE source = 'notion' AND source_id = ANY(%s) GROUP BY source_id
"""


def route(cur: Any, workspace_id: str) -> Row | None:
    """The org a connected workspace belongs to and its KC mapping (None: not connected)."""
    cur.execute(NAME_WORKSPACE, (workspace_id,))
    return fetch_one(cur, ROUTE, (workspace_id,))


def connect(
    cur: Any, org_id: str, workspace_id: str, secret_name: str, domains: Mapping[str, str]
) -> bool:
    """Claim ``workspace_id`` for the org (or update the org's own claim). False when another
    org holds it: the insert finds its row and the update cannot see it."""
    mapping = json.dumps(dict(domains), sort_keys=True)
    cur.execute(CLAIM_LOCK, (workspace_id, workspace_id))
    claimed = fetch_one(
        cur, CLAIM, (workspace_id, org_id, secret_name, mapping, workspace_id, org_id)
    )
    cur.execute(UNSCOPE)
    if claimed is not None:
        return True
    return fetch_one(cur, RECONNECT, (secret_name, mapping, workspace_id)) is not None


def release(cur: Any, workspace_id: str) -> None:
    """Delete the org's row of ``workspace_id`` and its runs (see ``RELEASE``)."""
    cur.execute(RELEASE, (workspace_id,))


def get(cur: Any, workspace_id: str) -> Row | None:
    return fetch_one(cur, GET, (workspace_id,))


def secret_names(cur: Any) -> list[str]:
    """The Secret Manager names of every workspace the org holds (a released workspace's
    secret was deleted with its row)."""
    return [str(r["secret_name"]) for r in fetch_all(cur, SECRET_NAMES)]


def list_workspaces(cur: Any, *, connected_only: bool = False) -> list[Row]:
    return fetch_all(cur, LIST, (not connected_only,))


def start_sync(
    cur: Any, sync_id: str, org_id: str, workspace_id: str, kind: str, targets: Sequence[str]
) -> None:
    cur.execute(START_SYNC, (sync_id, org_id, workspace_id, kind, json.dumps(list(targets))))


def sync(cur: Any, sync_id: str) -> Row | None:
    return fetch_one(cur, SYNC, (sync_id,))


def recent_syncs(cur: Any, limit: int = 20) -> list[Row]:
    return fetch_all(cur, SYNCS, (limit,))


def advance(
    cur: Any,
    sync_id: str,
    step: int,
    *,
    position: int,
    cursor: str | None,
    seen: int,
    synced: int,
    skipped: int,
    done: bool,
) -> bool:
    """Checkpoint step ``step`` as finished; False if it was not the current step."""
    params = (position, cursor, seen, synced, skipped, done, done, sync_id, step)
    return fetch_one(cur, ADVANCE, params) is not None


def rate_limited(cur: Any, sync_id: str, step: int) -> int | None:
    """Count one 429 against the run; its new count, or None if ``step`` is not current."""
    row = fetch_one(cur, RATE_LIMITED, (sync_id, step))
    return int(row["rate_limited"]) if row else None


def edited_times(cur: Any, page_ids: Sequence[str]) -> dict[str, str]:
    """The ``last_edited_time`` each page's stored chunks were synced from."""
    if not page_ids:
        return {}
    return {
        str(r["source_id"]): str(r["edited"]) for r in fetch_all(cur, EDITED, (list(page_ids),))
    }
