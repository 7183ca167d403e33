"""A statement's rows as dicts keyed by column name: what every repository reads through
the cursor its caller's transaction gives it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pg8000.dbapi

from colony.store.wire import cached, prepared

Row = dict[str, Any]


def fetch_all(
    cur: pg8000.dbapi.Cursor,
    sql: str,
    params: Sequence[Any] = (),
    *,
    prepare: bool = False,
    cache: bool = False,
) -> list[Row]:
    """Execute ``sql`` and return its rows as dicts keyed by column name.

    ``prepare``: as a statement prepared once per connection (``colony.store.wire.prepared``),
    for the few run on every durable step. ``cache``: kept among the connection's most recent
    statements (``colony.store.wire.cached``), for a hot statement whose text varies.
    """
    if prepare:
        prepared(cur, sql, params)
    elif cache:
        cached(cur, sql, params)
    else:
        cur.execute(sql, tuple(params))
    if cur.description is None:
        return []
    names = [column[0] for column in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def fetch_one(
    cur: pg8000.dbapi.Cursor, sql: str, params: Sequence[Any] = (), *, prepare: bool = False
) -> Row | None:
    rows = fetch_all(cur, sql, params, prepare=prepare)
    return rows[0] if rows else None


def fetch_value(cur: pg8000.dbapi.Cursor, sql: str, params: Sequence[Any] = ()) -> Any:
    """Execute ``sql`` and return the first column of its first row (None if no row)."""
    cur.execute(sql, tuple(params))
    row = cur.fetchone()
    return row[0] if row else None
