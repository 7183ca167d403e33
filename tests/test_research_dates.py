"""Dates as the web writes them (``colony.research.dates``): the writer's day kept, nothing
from the future, a press release's dateline, a date in a URL."""

from __future__ import annotations

from datetime import date

import pytest

from colony.research import dates

TODAY = date(2026, 12, 3)


@pytest.mark.parametrize(
    ("value", "day"),
    [
        ("2026-11-02", date(2026, 11, 2)),
        ("2026-11-02T23:30:00-08:00", date(2026, 11, 2)),  # the writer's day, not UTC's
        ("2026-11-02T09:00:00.000Z", date(2026, 11, 2)),
        ("2026-11-02 09:00:00+0000", date(2026, 11, 2)),
        ("Mon, 02 Nov 2026 09:00:00 GMT", date(2026, 11, 2)),
        ("Mon, 02 Nov 2026 23:30:00 -0800", date(2026, 11, 2)),
        (1_793_610_000_000, date(2026, 11, 2)),  # epoch milliseconds (Lever)
        ("2026-02-30", None),
        ("soon", None),
        ("", None),
        (None, None),
        (True, None),
        (10**30, None),
    ],
)
def test_parse(value: object, day: date | None) -> None:
    assert dates.parse(value) == day


def test_published_refuses_the_future_and_the_prehistoric() -> None:
    assert dates.published(date(2026, 12, 4), TODAY) == date(2026, 12, 4)  # east of UTC
    assert dates.published(date(2026, 12, 5), TODAY) is None
    assert dates.published(date(1994, 12, 31), TODAY) is None


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("FOR IMMEDIATE RELEASE - November 2, 2026\nAcme opens", date(2026, 11, 2)),
        ("Columbus, Ohio (Nov. 2, 2026) - Acme opens", date(2026, 11, 2)),
        ("Released 2026-10-28; revised November 3, 2026", date(2026, 10, 28)),
        ("Founded in 1998", None),
    ],
)
def test_dateline(text: str, day: date | None) -> None:
    assert dates.dateline(text) == day


def test_a_date_in_a_url() -> None:
    assert dates.in_url("https://a.example/2026/11/02/opening") == date(2026, 11, 2)
    assert dates.in_url("https://a.example/news/2026-11-02-opening") == date(2026, 11, 2)
    assert dates.in_url("https://a.example/news/2026/opening") is None
    assert dates.in_url("https://a.example/p?d=/2026/11/02/") is None
