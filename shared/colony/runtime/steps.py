"""Durable steps (seed §4.3, in place of Inngest): a run's step outputs memoised in Postgres.

``step(db, org, run_id, key, compute, apply)`` returns the stored output when ``(run_id, key)``
finished before, without calling ``compute`` (no second LLM call for a finished step).
Otherwise it computes outside any transaction (LLM calls are slow), then stores the output
and applies its effects in ONE transaction: if a concurrent duplicate stored first, the
effects are not applied again and its stored output is returned. Effects therefore happen
exactly once per (run, step), however often the message that triggers them is delivered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pg8000.dbapi

from colony.store.db import Database, fetch_one

GET = "SELECT output FROM run_steps WHERE run_id = %s AND step_key = %s"
PUT = """
INSERT INTO run_steps (org_id, run_id, step_key, output) VALUES (%s, %s, %s, %s::jsonb)
ON CONFLICT (run_id, step_key) DO NOTHING
"""
COUNT_PREFIX = "SELECT count(*) FROM run_steps WHERE run_id = %s AND step_key LIKE %s"

Apply = Callable[[pg8000.dbapi.Cursor, Any], None]


def stored(db: Database, org_id: str, run_id: str, key: str) -> Any | None:
    with db.transaction(org_id) as cur:
        row = fetch_one(cur, GET, (run_id, key))
    return None if row is None else row["output"]


def step(
    db: Database,
    org_id: str,
    run_id: str,
    key: str,
    compute: Callable[[], Any],
    apply: Apply | None = None,
) -> Any:
    """Run step ``key`` of ``run_id`` at most once to completion; return its output."""
    done = stored(db, org_id, run_id, key)
    if done is not None:
        return done
    output = compute()
    with db.transaction(org_id) as cur:
        cur.execute(PUT, (org_id, run_id, key, json.dumps(output)))
        if cur.rowcount == 1:
            if apply is not None:
                apply(cur, output)
            return output
        row = fetch_one(cur, GET, (run_id, key))
    return row["output"] if row else output
