"""The orgs a schedule serves (``colony.registry.schedules``), a page at a time.

Read in a transaction with no org scope, through the owner function of migration 0026: the
application role cannot list organisations itself (row-level security shows it one org).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

ORGS = "SELECT colony_scheduled_orgs FROM colony_scheduled_orgs(%s, %s, %s)"
BRIEF_DUE = "SELECT org_id, local_day FROM colony_brief_due_orgs(%s, %s, %s)"


def org_page(cur: Any, serves: str, after: str | None, size: int) -> list[str]:
    """Up to ``size`` org ids after ``after`` (in id order) that ``serves`` names."""
    cur.execute(ORGS, (serves, after, size))
    return [str(row[0]) for row in cur.fetchall()]


def brief_due_page(cur: Any, after: str | None, size: int, at: datetime) -> list[tuple[str, date]]:
    """Up to ``size`` (org id, local day) after ``after``: the orgs whose brief is due at
    ``at`` in their own time zone (migration 0053), each with the day it is for."""
    cur.execute(BRIEF_DUE, (after, size, at))
    return [(str(row[0]), row[1]) for row in cur.fetchall()]
