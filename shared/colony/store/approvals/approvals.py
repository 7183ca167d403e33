"""ENT-011, the approval queue: what agents propose and people decide (CONST-001).

Every function takes the cursor of a transaction opened under the item's org
(``Database.transaction(org_id)``), so RLS scopes each statement; a flow that adds an item
inside a durable step's ``apply`` passes that step's cursor, and the item commits with it.

Adding or deciding an item notifies ``colony_approvals`` with ``<org id>:<item id>`` (ids
only, never content; delivered when the transaction commits), which the chat function's hub
turns into the /overview queue's live updates (``colony.chat.hub``). ``listen`` takes the
hub's own dedicated connection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one, fetch_value

CHANNEL = "colony_approvals"
LISTEN = f"LISTEN {CHANNEL}"
# An item is routed as it is added (issue 35, ``colony.store.approvals.routing``): a KC
# candidate to the org's admins; a chat's tool action to the person who asked; a deal
# update to the deal's owner; anything about a prospect to the prospect's owner (a follow-up
# without one, to its deal's). Only an active person is routed to; otherwise the item is the
# team's, unassigned, until its escalation hands it to the org's backup.
ADD = """
WITH p AS (SELECT %s::text AS kind, %s::jsonb AS payload),
route AS (
    SELECT CASE
        WHEN p.kind = 'kc_update_candidate' THEN NULL
        WHEN p.kind = 'tool_action' THEN (
            SELECT m.user_id FROM org_members m
            WHERE m.user_id = p.payload->>'requested_by' AND m.status = 'active')
        ELSE coalesce(
            (SELECT c.owner_id FROM contacts c JOIN org_members m
                 ON m.org_id = c.org_id AND m.user_id = c.owner_id AND m.status = 'active'
             WHERE p.kind <> 'deal_update' AND c.id = p.payload->>'contact_id'),
            (SELECT d.owner_id FROM deals d JOIN org_members m
                 ON m.org_id = d.org_id AND m.user_id = d.owner_id AND m.status = 'active'
             WHERE d.id = p.payload->>'deal_id'))
    END AS assignee,
    CASE WHEN p.kind = 'kc_update_candidate' THEN 'admin' END AS assignee_role
    FROM p
),
ins AS (
    INSERT INTO approval_items (org_id, kind, source_agent, run_id, subject_id, payload,
                                llm_call_id, assignee, assignee_role)
    SELECT %s, p.kind, %s, %s, %s, p.payload, %s, route.assignee, route.assignee_role
    FROM p, route RETURNING id, org_id
)
SELECT id, pg_notify(%s, org_id || ':' || id) FROM ins
"""
FOR_UPDATE = """
SELECT id, kind, status, payload, edited_payload, run_id, subject_id, decided_by, decided_at,
       assignee, assignee_role
FROM approval_items WHERE id = %s FOR UPDATE
"""
DECIDE = """
WITH upd AS (
    UPDATE approval_items SET status = %s, edited_payload = COALESCE(%s::jsonb, edited_payload),
        decided_by = %s, decided_at = now() WHERE id = %s RETURNING id, org_id
)
SELECT pg_notify(%s, org_id || ':' || id) FROM upd
"""
DECIDED = """
SELECT id, status, decided_by, decided_at FROM approval_items WHERE id = ANY(%s::text[])
"""
BY_RUN = "SELECT id, status, payload FROM approval_items WHERE run_id = %s AND kind = %s"
STATUSES = "SELECT id, status FROM approval_items WHERE id = ANY(%s::text[])"
KIND = "SELECT kind FROM approval_items WHERE id = %s"
# Whose queue an item is in, for its card; and "mine": a person's own items, and the
# admins' when they are an active admin (``colony.store.approvals.routing``).
QUEUE = """a.assignee, a.assignee_role, a.escalated_from,
       (SELECT m.name FROM org_members m WHERE m.user_id = a.assignee) AS assignee_name"""
MINE = """(%s::text IS NULL OR a.assignee = %s OR (a.assignee_role = 'admin' AND EXISTS (
    SELECT 1 FROM org_members m WHERE m.user_id = %s AND m.status = 'active'
      AND m.role IN ('org:admin', 'admin'))))"""
# What a capability learns about a pending item after it was queued (what the CRM held when
# the card was built): one top-level key of its payload, only while no one has decided it.
NOTE = """
UPDATE approval_items SET payload = payload || jsonb_build_object(%s::text, %s::jsonb)
WHERE id = %s AND status = 'pending'
"""
PENDING = f"""
SELECT a.id, a.kind, a.source_agent, a.subject_id, a.payload, a.created_at,
       k.object_name AS kit_object, {QUEUE}
FROM approval_items a LEFT JOIN deployment_kits k ON k.approval_item_id = a.id
WHERE a.status = 'pending' AND (%s::text IS NULL OR a.kind = %s) AND {MINE}
ORDER BY a.created_at DESC, a.id LIMIT %s
"""
# The same, with what a person needs beside the payload to decide: the prospect and its
# signals (the stored ones with their provenance, strongest first, as ``store.campaigns.signals``
# reads them; and the contact's own list, for a contact never enriched), the campaign, the
# deal as it stands now (a deal update's diff is against it). One statement for the page.
PENDING_DETAILED = f"""
SELECT a.id, a.kind, a.source_agent, a.subject_id, a.payload, a.created_at,
       k.object_name AS kit_object, {QUEUE},
       c.name AS contact_name, c.title AS contact_title, c.company AS contact_company,
       c.signals AS contact_signals, c.enrichment->'research' AS contact_research,
       (SELECT jsonb_agg(jsonb_build_object(
                   'type', s.type, 'detail', s.detail, 'quote', s.quote, 'source', s.source,
                   'confidence', round(s.confidence::numeric, 3), 'observed_on', s.observed_on)
               ORDER BY s.confidence DESC, s.observed_on DESC NULLS LAST, s.type, s.signal_key)
        FROM contact_signals s WHERE s.contact_id = c.id) AS stored_signals,
       g.id AS campaign_id, g.name AS campaign_name,
       d.name AS deal_name, d.stage AS deal_stage, d.value AS deal_value,
       d.next_action AS deal_next_action, d.close_date AS deal_close_date
FROM approval_items a
LEFT JOIN deployment_kits k ON k.approval_item_id = a.id
LEFT JOIN contacts c ON c.id = a.payload->>'contact_id'
LEFT JOIN campaigns g ON g.id = a.payload->>'campaign_id'
LEFT JOIN deals d ON a.kind IN ('deal_update', 'crm_conflict') AND d.id = a.payload->>'deal_id'
WHERE a.status = 'pending' AND (%s::text IS NULL OR a.kind = %s)
  AND (%s::text IS NULL OR a.payload->>'campaign_id' = %s) AND {MINE}
ORDER BY a.created_at DESC, a.id LIMIT %s
"""
PENDING_COUNT = "SELECT count(*) FROM approval_items WHERE status = 'pending'"
PENDING_BY_KIND = """
SELECT kind, count(*) AS n FROM approval_items WHERE status = 'pending' GROUP BY kind
ORDER BY kind
"""
PENDING_BY_CAMPAIGN = """
SELECT g.id, g.name, count(*) AS n
FROM approval_items a JOIN campaigns g ON g.id = a.payload->>'campaign_id'
WHERE a.status = 'pending' GROUP BY g.id, g.name ORDER BY g.name, g.id
"""


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def add(
    cur: Any,
    org_id: str,
    kind: str,
    source_agent: str,
    payload: Mapping[str, Any],
    *,
    subject_id: str | None = None,
    run_id: str | None = None,
    call_id: str | None = None,
) -> str:
    """Queue one item for a person's decision; returns its id. ``call_id``: the model call
    that drafted it (``AgentResult.call_id``), which ``colony explain`` shows."""
    params = (kind, _json(payload), org_id, source_agent, run_id, subject_id, call_id, CHANNEL)
    return str(fetch_value(cur, ADD, params))


def lock(cur: Any, item_id: str) -> Row | None:
    """The item, locked until the transaction ends (None: not in this org)."""
    return fetch_one(cur, FOR_UPDATE, (item_id,))


def decide(
    cur: Any, item_id: str, status: str, decided_by: str, edited: Mapping[str, Any] | None
) -> None:
    """Record the decision (and the edited payload, when there is one)."""
    edited_json = _json(edited) if edited is not None else None
    cur.execute(DECIDE, (status, edited_json, decided_by, item_id, CHANNEL))


def by_run(cur: Any, run_id: str, kind: str) -> Row | None:
    """The item of ``kind`` a run queued (None until it has)."""
    return fetch_one(cur, BY_RUN, (run_id, kind))


def statuses(cur: Any, item_ids: Sequence[str]) -> dict[str, str]:
    """Item id → status, for the ids that exist in this org."""
    return {str(r["id"]): r["status"] for r in fetch_all(cur, STATUSES, (list(item_ids),))}


def pending(
    cur: Any, *, kind: str | None = None, limit: int = 50, mine: str | None = None
) -> list[Row]:
    """The newest ``limit`` pending items (of ``kind``, if given; in ``mine``'s queue, if
    given: a user id), each with whose queue it is in and its kit's object name when it is a
    deployment kit."""
    return fetch_all(cur, PENDING, (kind, kind, mine, mine, mine, limit))


def pending_detailed(
    cur: Any,
    *,
    kind: str | None = None,
    campaign_id: str | None = None,
    limit: int = 50,
    mine: str | None = None,
) -> list[Row]:
    """``pending``, with each item's contact (and its signals), campaign and (deal updates)
    current deal."""
    params = (kind, kind, campaign_id, campaign_id, mine, mine, mine, limit)
    return fetch_all(cur, PENDING_DETAILED, params)


def pending_count(cur: Any) -> int:
    return int(fetch_value(cur, PENDING_COUNT))


def pending_facets(cur: Any) -> dict[str, Any]:
    """How many items are pending per kind, and per campaign (``{id, name, pending}``)."""
    kinds = {str(r["kind"]): int(r["n"]) for r in fetch_all(cur, PENDING_BY_KIND)}
    campaigns = [
        {"id": r["id"], "name": r["name"], "pending": int(r["n"])}
        for r in fetch_all(cur, PENDING_BY_CAMPAIGN)
    ]
    return {"kinds": kinds, "campaigns": campaigns}


def decided(cur: Any, item_ids: Sequence[str]) -> list[Row]:
    """``id, status, decided_by, decided_at`` of the ids that exist in this org."""
    return fetch_all(cur, DECIDED, (list(item_ids),))


def listen(conn: Any) -> None:
    """``LISTEN`` on the approvals channel (the hub's dedicated autocommit connection)."""
    conn.execute_simple(LISTEN)


def note(cur: Any, item_id: str, key: str, value: Any) -> bool:
    """Set ``key`` of a pending item's payload to ``value``; False once it is decided (or
    not in this org): a decision is made on what the card showed, never changed after."""
    cur.execute(NOTE, (key, json.dumps(value), item_id))
    return bool(cur.rowcount == 1)


def kind_of(cur: Any, item_id: str) -> str | None:
    """The item's kind, without locking it (None: not in this org)."""
    row = fetch_one(cur, KIND, (item_id,))
    return None if row is None else str(row["kind"])
