"""ENT-008's event log: every SSE event of every chat turn, numbered per session.

Appending bumps ``chat_sessions.last_seq`` and inserts the events in one statement, and
``pg_notify`` tells every listening chat instance (``colony.chat.hub``) that the session has
new events; the notification is delivered when the appending transaction commits, so a
follower never hears of an event it cannot read yet. A notification's payload is
``<session id>:<seq>`` only, never content.

``append``, ``after`` and ``last_seq`` take the cursor of a transaction opened under the
session's org (``Database.transaction(org_id)``), so RLS scopes all of it to the org.
``listen`` and ``ping`` take the hub's own dedicated connection (autocommit, no org scope:
it only ever hears ids).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store import llm_calls
from colony.store.db import Row, fetch_all, fetch_one, fetch_value

CHANNEL = "colony_chat_events"

# One round trip: number the events, insert them, and notify (delivered at commit).
APPEND = """
WITH s AS (
    UPDATE chat_sessions SET last_seq = last_seq + %s WHERE id = %s RETURNING last_seq
), ins AS (
    INSERT INTO chat_events (org_id, session_id, seq, turn_id, type, data)
    SELECT %s, %s, s.last_seq - %s + e.ord, %s, e.type, e.data::jsonb
    FROM s, unnest(%s::text[], %s::text[]) WITH ORDINALITY AS e(type, data, ord)
    RETURNING seq
)
SELECT (SELECT max(seq) FROM ins), pg_notify(%s, %s || ':' || (SELECT max(seq) FROM ins))
"""
# The same, with the turn's history rows and its model calls' records (``llm_calls``) inserted
# in the same statement: one round trip for a turn's step.
APPEND_WITH_TURNS = f"""
WITH calls AS ({llm_calls.ADD_MANY.strip()}
), t AS (
    INSERT INTO chat_turns (org_id, session_id, role, content, tool_call, turn_id, llm_call_id)
    SELECT %s, %s, r.role, r.content, r.call::jsonb, %s,
           CASE WHEN r.role = 'assistant' THEN %s::text END
    FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS r(role, content, call, ord)
    ORDER BY r.ord
    RETURNING id
), gone AS (
    -- the rows a compaction folded into the summary row that t inserts: both, or neither
    DELETE FROM chat_turns WHERE session_id = %s AND id = ANY(%s::bigint[])
), s AS (
    UPDATE chat_sessions SET last_seq = last_seq + %s WHERE id = %s RETURNING last_seq
), ins AS (
    INSERT INTO chat_events (org_id, session_id, seq, turn_id, type, data)
    SELECT %s, %s, s.last_seq - %s + e.ord, %s, e.type, e.data::jsonb
    FROM s, unnest(%s::text[], %s::text[]) WITH ORDINALITY AS e(type, data, ord)
    RETURNING seq
)
SELECT (SELECT max(last_seq) FROM s) AS last_seq,
       (SELECT array_agg(id ORDER BY id) FROM t) AS ids,
       CASE WHEN EXISTS (SELECT 1 FROM ins)
            THEN pg_notify(%s, %s || ':' || (SELECT max(seq) FROM ins)) END AS notified
"""
AFTER = """
SELECT seq, turn_id, type, data FROM chat_events
WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s
"""
LAST_SEQ = "SELECT last_seq FROM chat_sessions WHERE id = %s"
TOOL_RESULT = """
SELECT data FROM chat_events
WHERE session_id = %s AND type = 'tool_result' AND data->>'call_id' = %s
ORDER BY seq LIMIT 1
"""
LISTEN = f"LISTEN {CHANNEL}"
# A no-op query makes pg8000 read whatever arrived (notifications first); on a timeout it
# doubles as a liveness check of the connection.
PING = "SELECT 1"


def append(
    cur: Any,
    org_id: str,
    session_id: str,
    turn_id: str,
    events: Sequence[tuple[str, Mapping[str, Any]]],
) -> int | None:
    """Append ``(type, data)`` events of ``turn_id`` (numbered in order) and notify the
    listeners; returns the last one's seq, or None when the session is not in this org
    (RLS hid its row, so nothing was written)."""
    n = len(events)
    types = [t for t, _ in events]
    datas = [json.dumps(d, separators=(",", ":")) for _, d in events]
    last = fetch_value(
        cur,
        APPEND,
        (n, session_id, org_id, session_id, n, turn_id, types, datas, CHANNEL, session_id),
    )
    return None if last is None else int(last)


def append_with_turns(
    cur: Any,
    org_id: str,
    session_id: str,
    turn_id: str,
    rows: Sequence[tuple[str, str, Mapping[str, Any] | None]],
    events: Sequence[tuple[str, Mapping[str, Any]]],
    calls: Sequence[Mapping[str, Any]] = (),
    *,
    call_id: str | None = None,
    gone: Sequence[int] = (),
) -> tuple[int | None, list[int]]:
    """``append``, with ``rows`` (role, content, tool call) added to the session's history
    (``chat_turns``) and ``calls`` (``llm_calls`` rows, as ``llm_calls.ADD_MANY`` reads
    them) kept, in the same statement (assistant rows record ``call_id``, the model call
    that wrote them) and the session's rows ``gone`` deleted (those a compaction folded into
    the summary row among ``rows``), in the same statement; returns the session's last seq
    (None: the session is not in this org) and the new rows' ids, in order."""
    n = len(events)
    row = fetch_one(
        cur,
        APPEND_WITH_TURNS,
        (
            json.dumps(list(calls), separators=(",", ":")),
            org_id,
            session_id,
            turn_id,
            call_id,
            [r[0] for r in rows],
            [r[1] for r in rows],
            [json.dumps(r[2]) if r[2] is not None else None for r in rows],
            session_id,
            list(gone),
            n,
            session_id,
            org_id,
            session_id,
            n,
            turn_id,
            [t for t, _ in events],
            [json.dumps(d, separators=(",", ":")) for _, d in events],
            CHANNEL,
            session_id,
        ),
    )
    assert row is not None
    last = row["last_seq"]
    return (None if last is None else int(last)), [int(i) for i in row["ids"] or ()]


def after(cur: Any, session_id: str, seq: int, limit: int = 500) -> list[Row]:
    """Up to ``limit`` events past ``seq``, in order (``seq, turn_id, type, data``)."""
    return fetch_all(cur, AFTER, (session_id, seq, limit))


def last_seq(cur: Any, session_id: str) -> int | None:
    """The session's last event id (None: no such session in this org)."""
    value = fetch_value(cur, LAST_SEQ, (session_id,))
    return None if value is None else int(value)


def tool_result(cur: Any, session_id: str, call_id: str) -> Mapping[str, Any] | None:
    """The ``tool_result`` event of one call in the session (None: none in this org)."""
    row = fetch_one(cur, TOOL_RESULT, (session_id, call_id))
    return None if row is None else row["data"]


def listen(conn: Any) -> None:
    """Subscribe the hub's connection to ``CHANNEL``."""
    conn.execute_simple(LISTEN)


def ping(conn: Any) -> None:
    """Make the hub's connection read what arrived (see ``PING``)."""
    conn.execute_simple(PING)
