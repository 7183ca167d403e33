"""The brief delivered at the org's chosen local time (issue 35 items 3 and 4's delivery): to
the people who asked for it, by email or Slack, each person's waiting count first, once a
day, at the same local time across a daylight-saving change. Real parts: PostgreSQL, the
SMTP server and adapter, the Slack stand-in and adapter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from colony.contracts.notifications import BriefTime
from colony.flows.notifications import settings as notify
from colony.flows.notifications.local_time import next_at
from colony.testing.slack_server import SlackServer
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB
from tests.notify_world import ORG, World, make_world

BERLIN, NEW_YORK = ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")


def test_the_local_time_comes_round_at_the_same_wall_clock_across_dst() -> None:
    eight = time(8, 0)
    # Berlin leaves summer time on 25 October 2026: 08:00 is 06:00 UTC before, 07:00 after
    assert next_at(datetime(2026, 10, 24, 7, tzinfo=UTC), eight, BERLIN) == datetime(
        2026, 10, 25, 7, tzinfo=UTC
    )
    assert next_at(datetime(2026, 10, 23, 7, tzinfo=UTC), eight, BERLIN) == datetime(
        2026, 10, 24, 6, tzinfo=UTC
    )
    # New York enters summer time on 8 March 2026: 08:00 is 13:00 UTC before, 12:00 after
    assert next_at(datetime(2026, 3, 7, 14, tzinfo=UTC), eight, NEW_YORK) == datetime(
        2026, 3, 8, 12, tzinfo=UTC
    )
    # a local time the change skips (02:30 on 29 March in Berlin) still comes, an hour late
    skipped = next_at(datetime(2026, 3, 28, 12, tzinfo=UTC), time(2, 30), BERLIN)
    assert skipped == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)  # 03:30 CEST
    # strictly after: at the very instant, the next day
    at = datetime(2026, 12, 1, 8, tzinfo=UTC)
    assert next_at(at, eight, ZoneInfo("UTC")) == datetime(2026, 12, 2, 8, tzinfo=UTC)


@pytest.fixture
def world(testdb: PgDB, tmp_path: Path, smtp: SmtpServer) -> Iterator[World]:
    with SlackServer() as slack:
        w = make_world(testdb.app(), tmp_path, smtp, slack)
        w.connect_slack()
        w.slack_user("user_alice", "U0ALICE")
        for user in ("user_alice", "user_bob"):  # the items themselves are not what is tested
            w.choose(user, items_waiting="off")
        yield w


def snapshot(world: World, day: str) -> None:
    numbers = {
        "messages_sent": 12,
        "replies_received": 3,
        "replies_positive": 2,
        "replies_negative": 1,
        "circuit_breaker": "closed",
    }
    world.sql(
        "INSERT INTO daily_briefs (org_id, brief_date, content, data_snapshot)"
        " VALUES (%s, %s, 'Dana Reed at Granite Peak replied warmly.', %s::jsonb)",
        (ORG, day, json.dumps(numbers)),
    )


def test_the_brief_reaches_those_who_asked_at_their_local_time_once(world: World) -> None:
    world.choose("user_alice", brief="slack")
    world.choose("user_bob", brief="email")
    answer = notify.set_brief_time(world.deps, ORG, BriefTime(brief_at="08:00"))
    assert answer["next_at"] == "2026-12-01T08:00:00+00:00"  # now is Monday 09:00 UTC
    snapshot(world, "2026-11-30")
    contact = world.contact()
    items = [world.item(f"Draft {n}", contact) for n in range(3)]
    for item, person in zip(items, ("user_bob", "user_bob", "user_alice"), strict=True):
        world.sql("UPDATE approval_items SET assignee = %s WHERE id = %s", (person, item))
    world.clock.now = datetime(2026, 12, 1, 7, 59, tzinfo=UTC)
    assert world.run()["brief"] is None
    world.clock.now = datetime(2026, 12, 1, 8, 0, 40, tzinfo=UTC)
    assert world.run()["brief"] == "2026-12-01"
    world.clock.move(minutes=30)
    assert world.run()["brief"] is None  # once a day
    (mail,) = world.mails_to("bob@alpha.example")
    text = mail.message.get_content()
    assert mail.message["Subject"] == "Colony brief for 2026-12-01: waiting for you: 2 items"
    lines = text.splitlines()
    assert lines[2] == "Waiting for you: 2 items"  # the person's own queue first (routing)
    assert "Yesterday: 12 messages sent, 3 replies (2 positive, 1 negative)" in text
    assert "https://colony.example/overview#brief" in text
    assert "Dana" not in text  # the brief's text (it names prospects) stays on /overview
    (post,) = world.slack_posts("U0ALICE")
    assert post.blocks[0]["text"]["text"] == "Your brief for 2026-12-01"
    assert post.blocks[1]["text"]["text"].startswith("Waiting for you: 1 item")
    assert world.mails_to("alice@alpha.example") == []  # she asked for Slack
    world.clock.now = datetime(2026, 12, 2, 8, 1, tzinfo=UTC)
    assert world.run()["brief"] == "2026-12-02"
    assert len(world.mails_to("bob@alpha.example")) == 2


def test_the_brief_follows_the_orgs_time_zone(world: World) -> None:
    world.choose("user_bob", brief="email")
    notify.set_brief_time(world.deps, ORG, BriefTime(brief_at="08:00"))
    # the org's zone (the team's setting, issue 35 item 4) decides the instant: moved to
    # Berlin, the calendar is recomputed from the next delivery on
    world.sql("INSERT INTO org_team (org_id, time_zone) VALUES (%s, 'Europe/Berlin')", (ORG,))
    world.clock.now = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    world.run()
    (row,) = world.rows("SELECT brief_next_at FROM notify_settings")
    assert row["brief_next_at"] == datetime(2026, 12, 2, 7, 0, tzinfo=UTC)  # 08:00 CET


def test_a_brief_time_that_is_not_a_time_is_refused() -> None:
    from pydantic import ValidationError

    for bad in ("25:00", "8:00", "08:60", "noon", ""):
        with pytest.raises(ValidationError):
            BriefTime(brief_at=bad)
