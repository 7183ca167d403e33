"""Slack delivery when Slack does not take a message (issue 35, "Bad input"): a 429 retried
at its Retry-After, a webhook answering 404 retried and then the person told (their list on
/overview), a revoked bot token pausing Slack for the org (its messages held, said so) until
an admin connects it again. Real parts: PostgreSQL, the Slack stand-in, the slack_sdk
adapter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from colony.contracts.notifications import SlackIdentity
from colony.flows.notifications import settings as notify
from colony.flows.notifications.delivery import MAX_ATTEMPTS
from colony.testing.slack_server import SlackServer
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB
from tests.notify_world import ORG, World, make_world


@pytest.fixture
def world(testdb: PgDB, tmp_path: Path, smtp: SmtpServer) -> Iterator[World]:
    with SlackServer() as slack:
        w = make_world(testdb.app(), tmp_path, smtp, slack)
        w.connect_slack()
        w.slack_user("user_alice", "U0ALICE")
        w.choose("user_alice", items_waiting="slack", positive_reply="slack")
        w.choose("user_bob", items_waiting="off")
        yield w


def statuses(world: World) -> list[tuple[str, str, int]]:
    return [
        (r["status"], r["channel"], r["attempts"])
        for r in world.rows("SELECT status, channel, attempts FROM notifications ORDER BY id")
    ]


def test_a_429_is_retried_at_its_retry_after(world: World) -> None:
    world.slack_server.rate_limit(times=1, retry_after=90)
    world.item("Lease costs", world.contact())
    assert world.run()["sent"] == {"retry": 1}
    (row,) = world.rows("SELECT due_at, error FROM notifications")
    assert (row["due_at"] - world.clock.now).total_seconds() == 90
    assert "429" in row["error"]
    world.clock.move(seconds=60)
    assert world.run()["sent"] == {}  # not yet: Slack said 90 seconds
    world.clock.move(seconds=31)
    assert world.run()["sent"] == {"sent": 1}
    assert len(world.slack_posts("U0ALICE")) == 1
    assert statuses(world) == [("sent", "slack", 2)]


def test_a_webhook_answering_404_is_retried_then_the_person_is_told(world: World) -> None:
    hook = world.slack_server.webhook_url("T0ALPHA")
    body = SlackIdentity(webhook_url=hook)
    notify.set_slack_identity(world.deps, world.deps.secrets, ORG, "user_bob", body)
    world.choose("user_bob", positive_reply="slack")
    world.slack_server.remove_webhook(hook)  # the person deleted the webhook in Slack
    contact = world.contact()
    world.reply(world.item("Lease costs", contact), contact, "positive")
    outcomes = []
    for _ in range(MAX_ATTEMPTS):
        outcomes.append(world.run()["sent"])
        world.clock.move(hours=1)
    bob = notify.preferences(world.deps, ORG, "user_bob")
    (notice,) = bob["notices"]
    assert notice["status"] == "failed" and notice["attempts"] == MAX_ATTEMPTS
    assert notice["error"].startswith(f"gave up after {MAX_ATTEMPTS} attempts")
    assert "404" in notice["error"]
    assert not any(p.to.startswith("webhook:") for p in world.slack_posts())
    assert world.run()["sent"] == {}  # told once; not tried again
    # alice's messages through the org's bot went (the item and the reply)
    assert len(world.slack_posts("U0ALICE")) == 2


def test_a_revoked_token_pauses_slack_for_the_org_until_an_admin_reconnects(world: World) -> None:
    world.slack_server.revoke(world.tokens[ORG])
    contact = world.contact()
    world.item("First", contact)
    world.item("Second", contact)
    assert world.run()["sent"] == {"held": 1, "skipped": 1}  # the first pauses, holding both
    assert statuses(world) == [("held", "slack", 1), ("held", "slack", 0)]
    state = notify.preferences(world.deps, ORG, "user_alice")
    assert state["slack"]["paused"] is True
    assert "token_revoked" in state["slack"]["reason"]
    assert {n["status"] for n in state["notices"]} == {"held"}
    world.clock.move(minutes=5)
    world.item("Third", contact)
    assert world.run()["sent"] == {"held": 1}  # not even tried while paused
    assert world.slack_posts() == []
    world.connect_slack()  # a new token: what was held goes, once
    assert world.run()["sent"] == {"sent": 3}
    assert len(world.slack_posts("U0ALICE")) == 3
    assert notify.preferences(world.deps, ORG, "user_alice")["slack"]["paused"] is False


def test_a_person_slack_cannot_reach_is_told(world: World) -> None:
    world.choose("user_bob", items_waiting="slack")  # bob set no Slack identity
    world.item("Lease costs", world.contact())
    world.run()
    (notice,) = notify.preferences(world.deps, ORG, "user_bob")["notices"]
    assert notice["status"] == "failed" and "Slack member id" in notice["error"]
