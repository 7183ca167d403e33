"""An org's local day (issue 35 item 4): the team's "yesterday" in its own time zone.

A local day is [its midnight, the next midnight) in the zone, as UTC instants: 24 hours most
days, 23 on the day clocks go forward, 25 on the day they go back. Briefs count yesterday's
sending, replies and publishing over that window, so a team in New York reads about its own
yesterday, across a daylight-saving change too. Pure: ``zoneinfo`` and the clock given.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from colony.errors import ValidationFailed
from colony.policy.schedule import zone

DEFAULT_ZONE = "Etc/UTC"


def valid_zone(name: object, field: str = "time_zone") -> str:
    """``name`` if it is an IANA time zone; else ``ValidationFailed`` naming ``field``."""
    if not isinstance(name, str) or zone(name) is None or name != name.strip():
        raise ValidationFailed(
            f"{field}: {name!r} is not an IANA time zone name (such as 'Europe/Berlin' or"
            " 'America/New_York')"
        )
    return name


def _tz(name: str | None) -> ZoneInfo:
    return zone(name) or ZoneInfo(DEFAULT_ZONE)


def local_date(at: datetime, zone_name: str | None) -> date:
    """The date in the zone at the instant ``at`` (aware)."""
    return at.astimezone(_tz(zone_name)).date()


def day_bounds(day: date, zone_name: str | None) -> tuple[datetime, datetime]:
    """``day`` in the zone: [its local midnight, the next local midnight), in UTC."""
    tz = _tz(zone_name)
    start = datetime.combine(day, time(0), tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)


def yesterday(day: date, zone_name: str | None) -> tuple[datetime, datetime]:
    """The local day before ``day``: what a brief for ``day`` reports on."""
    return day_bounds(day - timedelta(days=1), zone_name)
