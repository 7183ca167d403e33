"""How an org's team works (``org_team``, migration 0053): its time zone (IANA), the local
time its daily brief is written, its named backup, how long an item may wait before it
escalates, and the rules that assign new prospects. No row: the defaults.

Every function takes the cursor of a transaction opened under the org (RLS scopes it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import time
from typing import Any

from colony.store.db import Row, fetch_one, fetch_value

DEFAULTS: dict[str, Any] = {
    "time_zone": "Etc/UTC",
    "brief_time": time(6, 0),
    "backup_user_id": None,
    "escalate_after_hours": None,
    "assignment": {"rules": []},
}
GET = """
SELECT time_zone, brief_time, backup_user_id, escalate_after_hours, assignment, updated_at
FROM org_team
"""
REPLACE = """
INSERT INTO org_team (org_id, time_zone, brief_time, backup_user_id, escalate_after_hours,
                      assignment)
VALUES (%s, %s, %s, %s, %s, %s::jsonb)
ON CONFLICT (org_id) DO UPDATE
SET time_zone = EXCLUDED.time_zone, brief_time = EXCLUDED.brief_time,
    backup_user_id = EXCLUDED.backup_user_id,
    escalate_after_hours = EXCLUDED.escalate_after_hours,
    assignment = EXCLUDED.assignment, updated_at = now()
"""
# Clerk's org metadata may name the zone: it sets that alone, keeping the rest.
SET_ZONE = """
INSERT INTO org_team (org_id, time_zone) VALUES (%s, %s)
ON CONFLICT (org_id) DO UPDATE SET time_zone = EXCLUDED.time_zone, updated_at = now()
WHERE org_team.time_zone <> EXCLUDED.time_zone
"""
# The database converts local days for the schedules' audience, so a zone must be one it
# knows as well as Python's ``zoneinfo`` (``pg_timezone_names`` reads its tz database).
ZONE_KNOWN = "SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = %s)"


def get(cur: Any) -> Row:
    """The org's team settings (the defaults where it set none)."""
    row = fetch_one(cur, GET)
    return dict(row) if row is not None else {**DEFAULTS, "updated_at": None}


def replace(
    cur: Any,
    org_id: str,
    *,
    time_zone: str,
    brief_time: time,
    backup_user_id: str | None,
    escalate_after_hours: int | None,
    assignment: Mapping[str, Any],
) -> None:
    params = (
        org_id,
        time_zone,
        brief_time,
        backup_user_id,
        escalate_after_hours,
        json.dumps(dict(assignment)),
    )
    cur.execute(REPLACE, params)


def set_time_zone(cur: Any, org_id: str, time_zone: str) -> bool:
    """Set the zone alone; whether it changed."""
    cur.execute(SET_ZONE, (org_id, time_zone))
    return bool(cur.rowcount)


def zone_known(cur: Any, name: str) -> bool:
    """Whether the database's tz database knows ``name``."""
    return bool(fetch_value(cur, ZONE_KNOWN, (name,)))
