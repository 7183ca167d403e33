"""When a sequence step may go out: in the contact's business hours, when its timezone is known.

Business hours are 09:00–17:00 on weekdays, local time. A due time inside them stands; one
outside moves to the next opening (a Saturday evening to Monday 09:00). An unknown or
invalid timezone leaves the time as it is: we do not guess where someone is.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

OPENS, CLOSES = time(9, 0), time(17, 0)


def zone(name: str | None) -> ZoneInfo | None:
    """The IANA zone ``name`` names (None: unknown, empty or not a zone)."""
    if not name or len(name) > 64:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def in_business_hours(at: datetime, timezone: str | None) -> datetime:
    """``at`` (aware), or the next business-hours opening after it in ``timezone``."""
    tz = zone(timezone)
    if tz is None:
        return at
    local = at.astimezone(tz)
    if local.weekday() < 5 and OPENS <= local.time() < CLOSES:
        return at
    day = local.date() if local.time() < OPENS else local.date() + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return datetime.combine(day, OPENS, tzinfo=tz).astimezone(at.tzinfo)
