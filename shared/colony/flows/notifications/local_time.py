"""The org's local time, as the brief's delivery reads it: its time zone and the next instant
its chosen local time comes round.

``org_time_zone`` is the one place the zone is read: the team's (``org_team.time_zone``, issue
35 item 4, refused at setup when the name does not exist; UTC for an org that set none).
Changing it moves the brief from its next delivery on: the one already booked keeps its time.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from colony.store.tenants import team

UTC_ZONE = ZoneInfo("UTC")


def org_time_zone(cur: Any) -> ZoneInfo:
    """The org's time zone (``cur``: a transaction of the org)."""
    return ZoneInfo(str(team.get(cur)["time_zone"]))


def next_at(after: datetime, at: time, zone: ZoneInfo) -> datetime:
    """The first instant strictly after ``after`` at which the clock in ``zone`` shows
    ``at`` (in UTC). A local time a daylight-saving change skips is read with the offset
    before the change (zoneinfo's ``fold=0``), so the brief comes an hour later that day
    rather than not at all; a time that happens twice is taken the first time."""
    local = after.astimezone(zone)
    for days in range(3):
        day = local.date() + timedelta(days=days)
        candidate = datetime.combine(day, at, tzinfo=zone).astimezone(UTC)
        if candidate > after:
            return candidate
    raise AssertionError("a local time comes round within three days")


def local_day(instant: datetime, zone: ZoneInfo) -> str:
    """The org's local date at ``instant`` (ISO)."""
    return instant.astimezone(zone).date().isoformat()
