"""ENT-008, chat sessions and their turns (``chat_sessions``, ``chat_turns``).

Every function takes the cursor of a transaction opened under the session's org
(``Database.transaction(org_id)``), so RLS scopes each statement: another org's session is
simply not there. The session's event log is ``colony.store.chat_events``.

Turns of one session are serialised by ``lock_session``: a transaction-scoped advisory lock,
held by the database (so it holds across function instances) until the caller's transaction
ends. Take it first in the transaction that runs the turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from colony.store import orgdata
from colony.store.approvals import approvals
from colony.store.db import Row, fetch_all, fetch_one, fetch_value
from colony.store.outbound import replies

# Two-key advisory lock: (class, session). The class keeps chat locks apart from others.
LOCK_CLASS = 5001
LOCK = "SELECT pg_advisory_xact_lock(%s, hashtext(%s))"
SESSION = "SELECT id FROM chat_sessions WHERE id = %s"
CREATE_SESSION = "INSERT INTO chat_sessions (org_id, user_id) VALUES (%s, %s) RETURNING id"
TURNS = """
SELECT id, role, content, tool_call, turn_id FROM chat_turns
WHERE session_id = %s ORDER BY id
"""
INSERT_TURN = """
INSERT INTO chat_turns (org_id, session_id, role, content, tool_call, turn_id, llm_call_id)
VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s) RETURNING id
"""
DELETE_TURNS = "DELETE FROM chat_turns WHERE session_id = %s AND id = ANY(%s::bigint[])"
RESULT_EXISTS = """
SELECT 1 FROM chat_turns WHERE session_id = %s AND role = 'tool'
  AND tool_call->>'id' = %s AND tool_call->>'status' = 'result'
"""
# Everything one model step of a turn reads, in one round trip (each part is its owner's
# own statement, nested): the session's turns, the newest pending approval items, today's
# brief, the recent replies, the active ICP, the org's name, and the status of every item a
# paused call of the session waits on. Rows come back as JSON (timestamps as ISO text).
HYDRATE = f"""
SELECT
  (SELECT coalesce(json_agg(t ORDER BY t.id), '[]') FROM ({{turns}}) t) AS turns,
  (SELECT coalesce(json_agg(q), '[]') FROM ({approvals.PENDING}) q) AS queue,
  (SELECT row_to_json(b) FROM ({{brief}}) b LIMIT 1) AS brief,
  (SELECT coalesce(json_agg(r), '[]') FROM ({replies.RECENT}) r) AS replies,
  (SELECT row_to_json(i) FROM ({orgdata.ACTIVE_ICP}) i LIMIT 1) AS icp,
  (SELECT name FROM ({orgdata.ORG_NAME}) o LIMIT 1) AS org_name,
  (SELECT coalesce(json_object_agg(a.id, a.status), '{{{{}}}}')
     FROM ({approvals.STATUSES}) a) AS awaited
"""
AWAITED_IDS = """
ARRAY(SELECT tool_call->>'approval_id' FROM chat_turns
      WHERE session_id = %s AND role = 'tool' AND tool_call->>'status' = 'awaiting')
"""

# ENT-009, read here only for the chat (today's brief as entity data and on GET /brief); the
# brief's own repository is the daily brief flow's.
BRIEF_ON = "SELECT id, brief_date, content, sections FROM daily_briefs WHERE brief_date = %s"
_HYDRATE = HYDRATE.format(turns=TURNS, brief=BRIEF_ON).replace(
    "ANY(%s::text[])", f"ANY({AWAITED_IDS.strip()})"
)


def lock_session(cur: Any, session_id: str) -> None:
    """Wait for, then hold until the transaction ends, the session's turn lock."""
    cur.execute(LOCK, (LOCK_CLASS, session_id))


def session_lock(session_id: str) -> tuple[int, str]:
    """The same lock as ``lock_session``, for ``Database.transaction(advisory_lock=...)``
    (taken with the transaction's ``BEGIN``, in one round trip)."""
    return (LOCK_CLASS, session_id)


def create_session(cur: Any, org_id: str, user_id: str) -> str:
    """A new session for ``user_id``; returns its id."""
    row = fetch_one(cur, CREATE_SESSION, (org_id, user_id))
    assert row is not None
    return str(row["id"])


def session_exists(cur: Any, session_id: str) -> bool:
    """Whether the session exists in this org (RLS hides every other org's)."""
    return fetch_one(cur, SESSION, (session_id,)) is not None


def turns(cur: Any, session_id: str) -> list[Row]:
    """The session's turns in order (``id, role, content, tool_call, turn_id``)."""
    return fetch_all(cur, TURNS, (session_id,))


def add_turn(
    cur: Any,
    org_id: str,
    session_id: str,
    turn_id: str,
    role: str,
    content: str,
    tool_call: Mapping[str, Any] | None = None,
    llm_call_id: str | None = None,
) -> int:
    """Append one turn row (``llm_call_id``: the model call that wrote it, for an answer or
    a tool call; ``colony explain`` follows it); returns its id."""
    call = json.dumps(tool_call) if tool_call is not None else None
    params = (org_id, session_id, role, content, call, turn_id, llm_call_id)
    return int(fetch_value(cur, INSERT_TURN, params))


def delete_turns(cur: Any, session_id: str, ids: Sequence[int]) -> None:
    """Remove the session's rows ``ids`` (those folded into its summary)."""
    cur.execute(DELETE_TURNS, (session_id, list(ids)))


def has_tool_result(cur: Any, session_id: str, call_id: str) -> bool:
    """Whether the tool call ``call_id`` already has its result row in the session."""
    return fetch_one(cur, RESULT_EXISTS, (session_id, call_id)) is not None


def hydrate(
    cur: Any,
    session_id: str,
    *,
    day: date,
    replies_since: datetime,
    approvals_shown: int,
    replies_shown: int,
) -> Row:
    """``HYDRATE``: ``turns`` (as ``turns``), ``queue`` (as ``approvals.pending``), ``brief``
    (as ``brief_on``, or None), ``replies`` (as ``replies.recent``), ``icp`` (or None),
    ``org_name`` and ``awaited`` (approval item id → status)."""
    params = (
        session_id,
        None,  # the queue's kind: every kind
        None,
        None,  # the queue's person: everyone's (approvals.MINE)
        None,
        None,
        approvals_shown,
        day,
        replies_since,
        replies_shown,
        session_id,
    )
    row = fetch_one(cur, _HYDRATE, params)
    assert row is not None
    return row


def brief_on(cur: Any, day: date) -> Row | None:
    """The org's daily brief of ``day`` (``id, brief_date, content, sections``), if one was
    written."""
    return fetch_one(cur, BRIEF_ON, (day,))
