"""Dates as the web writes them, read into a ``date``, and never one from the future.

A date is kept as its writer meant it: ``2026-11-02T23:30:00-08:00`` is 2 November (the
publisher's day), not 3 November in UTC. ``published(...)`` refuses a date after tomorrow:
a scheduled post, a typo or a page's copyright year pushed forward is not a publication
date. One day of slack, because "today" west of UTC can be tomorrow east of it.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from email.utils import parsedate_to_datetime

EARLIEST = date(1995, 1, 1)  # no web page was published before this (htmldate's floor too)
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?")
_URL_DATE = re.compile(r"/((?:19|20)\d{2})[/-](\d{1,2})[/-](\d{1,2})(?:/|[-_]|$)")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_LONG = re.compile(
    r"\b(" + "|".join(_MONTHS) + r")[a-z]*\.?\s+(\d{1,2}),?\s+((?:19|20)\d{2})\b",
    re.IGNORECASE,
)


def today_utc() -> date:
    return datetime.now(UTC).date()


def published(day: date | None, today: date) -> date | None:
    """``day`` if it can be a publication date as of ``today``, else None."""
    if day is None or day < EARLIEST or day > today + timedelta(days=1):
        return None
    return day


def _safe(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def parse(value: object) -> date | None:
    """A date from ISO 8601 (``2026-11-02``, ``2026-11-02T09:00:00+00:00``), RFC 2822
    (``Mon, 02 Nov 2026 09:00:00 GMT``) or epoch milliseconds (Lever's ``createdAt``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:  # milliseconds since the epoch
            return datetime.fromtimestamp(value / 1000, UTC).date()
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not (text := value.strip()[:100]):
        return None
    found = _ISO.match(text)
    if found:
        try:
            return datetime.fromisoformat(found.group(0).replace(" ", "T")).date()
        except ValueError:
            return _safe(*(int(part) for part in found.groups()))
    try:
        return parsedate_to_datetime(text).date()
    except (TypeError, ValueError, IndexError):
        return None


def in_url(url: str) -> date | None:
    """A ``/2026/11/02/`` (or ``/2026-11-02-``) date in a URL's path."""
    found = _URL_DATE.search(url.split("?", 1)[0])
    return _safe(*(int(part) for part in found.groups())) if found else None


def dateline(text: str) -> date | None:
    """The first ``November 2, 2026`` or ``2026-11-02`` in ``text`` (a press release's
    dateline sits in its first lines)."""
    long, iso = _LONG.search(text), _ISO.search(text)
    if long and (iso is None or long.start() < iso.start()):
        month = _MONTHS.index(long.group(1).lower()) + 1
        return _safe(int(long.group(3)), month, int(long.group(2)))
    return _safe(*(int(part) for part in iso.groups())) if iso else None
