"""The brief in the team's morning (issue 35 item 4), on the real PostgreSQL: "yesterday" is
the org's local day, 23 hours on the day clocks go forward and 25 on the day they go back,
and the brief counts exactly what happened between its local midnights; the hourly
daily-brief schedule serves each org once its local brief time has passed on its local day
(across the same change), with that day, until the brief is written."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any

import pytest

from colony.flows.insights.brief import daily_brief, snapshot
from colony.policy import local_day
from colony.runtime.deps import Deps
from colony.store import fetch_one
from colony.store.tenants import schedules, team
from tests.conftest import PgDB
from tests.test_brief import ORG, make_deps

pytestmark = pytest.mark.covers("AGT-010", "ENT-009")

NY = "America/New_York"


def z(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_a_local_day_is_23_or_25_hours_across_daylight_saving() -> None:
    spring = local_day.yesterday(date(2026, 3, 9), NY)
    assert spring == (z("2026-03-08T05:00:00Z"), z("2026-03-09T04:00:00Z"))
    assert spring[1] - spring[0] == timedelta(hours=23)
    autumn = local_day.yesterday(date(2026, 11, 2), NY)
    assert autumn == (z("2026-11-01T04:00:00Z"), z("2026-11-02T05:00:00Z"))
    assert autumn[1] - autumn[0] == timedelta(hours=25)
    plain = local_day.yesterday(date(2026, 6, 2), "Europe/Berlin")
    assert plain[1] - plain[0] == timedelta(hours=24) and plain[0] == z("2026-05-31T22:00:00Z")
    assert local_day.local_date(z("2026-11-30T09:00:00Z"), "Pacific/Pago_Pago") == date(
        2026, 11, 29
    )
    for bad in ("Mars/Olympus_Mons", "", " Europe/Berlin", "UTC+2", None, 7):
        with pytest.raises(Exception, match="not an IANA time zone"):
            local_day.valid_zone(bad)


def _sent_at(deps: Deps, *instants: str) -> None:
    with deps.db.transaction(ORG) as cur:
        for stamp in instants:
            item = fetch_one(
                cur,
                "INSERT INTO approval_items (org_id, kind, status, source_agent, payload)"
                " VALUES (%s, 'outbound_message', 'applied', 'AGT-005', '{}') RETURNING id",
                (ORG,),
            )
            assert item is not None
            cur.execute(
                "INSERT INTO outbox (org_id, approval_item_id, subject, body, status, created_at)"
                " VALUES (%s, %s, 's', 'b', 'delivered', %s)",
                (ORG, item["id"], z(stamp)),
            )


def _zone(deps: Deps, zone: str, brief_time: time = time(6, 0)) -> None:
    with deps.db.transaction(ORG) as cur:
        team.replace(
            cur,
            ORG,
            time_zone=zone,
            brief_time=brief_time,
            backup_user_id=None,
            escalate_after_hours=None,
            assignment={"rules": []},
        )


@pytest.mark.parametrize(
    ("day", "inside", "outside", "utc_count"),
    [
        (  # clocks go forward on 2026-03-08: a 23-hour yesterday
            date(2026, 3, 9),
            ["2026-03-08T05:00:00Z", "2026-03-08T12:00:00Z", "2026-03-09T03:59:59Z"],
            ["2026-03-08T04:59:59Z", "2026-03-09T04:00:00Z", "2026-03-08T01:00:00Z"],
            4,
        ),
        (  # clocks go back on 2026-11-01: a 25-hour yesterday
            date(2026, 11, 2),
            ["2026-11-01T04:00:00Z", "2026-11-02T00:30:00Z", "2026-11-02T04:59:59Z"],
            ["2026-11-01T03:59:59Z", "2026-11-02T05:00:00Z", "2026-10-31T12:00:00Z"],
            2,
        ),
    ],
)
def test_the_brief_counts_the_teams_own_yesterday(
    testdb: PgDB, day: date, inside: list[str], outside: list[str], utc_count: int
) -> None:
    deps = make_deps(testdb)
    _zone(deps, NY)
    _sent_at(deps, *inside, *outside)
    with deps.db.transaction(ORG) as cur:
        assert snapshot(cur, day, NY)["messages_sent"] == len(inside)
        # UTC days would have counted a different set: the zone is what decides
        assert snapshot(cur, day, None)["messages_sent"] == utc_count != len(inside)
    written = daily_brief(deps, ORG, day)
    assert written["created"] and written["data_snapshot"]["messages_sent"] == len(inside)


def test_today_is_the_orgs_own_date(testdb: PgDB) -> None:
    """The tests' clock is 2026-11-30 09:00 UTC: still 29 November in Pago Pago (UTC-11)."""
    deps = make_deps(testdb)
    _zone(deps, "Pacific/Pago_Pago")
    assert daily_brief(deps, ORG)["brief_date"] == "2026-11-29"
    with pytest.raises(Exception, match=r"after today \(2026-11-29 in Pacific/Pago_Pago\)"):
        daily_brief(deps, ORG, date(2026, 11, 30))


def _due(deps: Deps, at: str) -> list[tuple[str, Any]]:
    with deps.db.transaction(None) as cur:
        return schedules.brief_due_page(cur, None, 100, z(at))


def test_the_brief_is_due_at_the_local_brief_time_across_daylight_saving(
    testdb: PgDB,
) -> None:
    deps = make_deps(testdb)
    _zone(deps, NY, time(7, 0))
    # winter (EST, UTC-5): 07:00 local is 12:00 UTC
    assert _due(deps, "2026-03-07T11:00:00Z") == []
    assert _due(deps, "2026-03-07T12:00:00Z") == [(ORG, date(2026, 3, 7))]
    # the day clocks go forward (EDT, UTC-4): 07:00 local is 11:00 UTC
    assert _due(deps, "2026-03-08T10:59:59Z") == []
    assert _due(deps, "2026-03-08T11:00:00Z") == [(ORG, date(2026, 3, 8))]
    # the day clocks go back (EST again): 07:00 local is 12:00 UTC
    assert _due(deps, "2026-11-01T11:30:00Z") == []
    assert _due(deps, "2026-11-01T12:00:00Z") == [(ORG, date(2026, 11, 1))]
    # late in the local evening it is still that local day's brief (UTC's date has turned)
    assert _due(deps, "2026-11-02T03:00:00Z") == [(ORG, date(2026, 11, 1))]
    # once written, that day is served no more; the next local day is, at its own time
    daily_brief(deps, ORG, date(2026, 11, 1))
    assert _due(deps, "2026-11-01T23:00:00Z") == []
    assert _due(deps, "2026-11-02T11:59:00Z") == []
    assert _due(deps, "2026-11-02T12:00:00Z") == [(ORG, date(2026, 11, 2))]
    # an org with no team settings is served at 06:00 UTC, as before
    with deps.db.transaction("org_plain") as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES ('org_plain', 'Plain')")
    assert ("org_plain", date(2026, 11, 2)) in _due(deps, "2026-11-02T06:00:00Z")
    assert all(org != "org_plain" for org, _ in _due(deps, "2026-11-02T05:59:00Z"))
