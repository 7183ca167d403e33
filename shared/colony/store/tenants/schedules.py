"""The orgs a schedule serves (``colony.registry.schedules``), a page at a time.

Read in a transaction with no org scope, through the owner function of migration 0026: the
application role cannot list organisations itself (row-level security shows it one org).
"""

from __future__ import annotations

from typing import Any

ORGS = "SELECT colony_scheduled_orgs FROM colony_scheduled_orgs(%s, %s, %s)"


def org_page(cur: Any, serves: str, after: str | None, size: int) -> list[str]:
    """Up to ``size`` org ids after ``after`` (in id order) that ``serves`` names."""
    cur.execute(ORGS, (serves, after, size))
    return [str(row[0]) for row in cur.fetchall()]
