"""The ``Slack`` port's conformance suite: the real adapter (the official ``slack_sdk``)
against ``colony.testing.slack_server`` (a local Slack: the Web API's ``chat.postMessage``
and incoming webhooks over HTTP, checking the bot token and the Block Kit shapes), and the
memory fake, held to the same contract (``colony.ports.slack``). Stood in: Slack itself."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from colony.adapters.slack import SlackAdapter
from colony.ports import Slack, SlackMessage, SlackRefused, SlackRetryLater, SlackTokenRevoked
from colony.testing.loopback import closed_port
from colony.testing.slack_memory import MemorySlack
from colony.testing.slack_server import SlackServer
from tests.conformance.exercise import exercised

TEAM = "T0COLONY"
MESSAGE = SlackMessage(
    "2 items wait for you",
    (
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Outbound message*: Lease costs"}},
        {
            "type": "actions",
            "block_id": "decide",
            "elements": [
                {
                    "type": "button",
                    "action_id": "approve",
                    "text": {"type": "plain_text", "text": "Approve"},
                    "value": "org_a:item-1",
                },
                {
                    "type": "button",
                    "action_id": "open",
                    "text": {"type": "plain_text", "text": "Open"},
                    "url": "https://colony.example/overview#item-1",
                },
            ],
        },
    ),
)


@dataclass
class Harness:
    slack: Slack
    world: Any  # issues tokens and webhooks, revokes, rate limits
    posted: Any  # () -> what was accepted, as (where, text)


@pytest.fixture(params=["adapter", "memory"])
def harness(request: pytest.FixtureRequest, no_ambient_config: None) -> Iterator[Harness]:
    if request.param == "memory":
        memory = MemorySlack()
        yield Harness(memory, memory, lambda: [(to, m.text) for to, m in memory.posted])
        return
    with SlackServer() as server:
        yield Harness(
            SlackAdapter(server.api_url, timeout=5),
            server,
            lambda: [(p.to, p.text) for p in server.posted],
        )


def test_it_is_a_slack(harness: Harness) -> None:
    token, hook = harness.world.bot_token(TEAM), harness.world.webhook_url(TEAM)
    with exercised(Slack, harness.slack) as slack:
        assert slack.team_of(token) == TEAM
        assert slack.post(token, "U0DANA", MESSAGE)
        assert slack.post_webhook(hook, MESSAGE) == ""
    posted = harness.posted()
    assert posted[0] == ("U0DANA", "2 items wait for you")
    assert posted[1][0].startswith("webhook:") and len(posted) == 2


def test_a_rate_limit_is_retry_later_with_slacks_seconds(harness: Harness) -> None:
    token, hook = harness.world.bot_token(TEAM), harness.world.webhook_url(TEAM)
    harness.world.rate_limit(times=2, retry_after=17)
    with pytest.raises(SlackRetryLater) as first:
        harness.slack.post(token, "U0DANA", MESSAGE)
    with pytest.raises(SlackRetryLater) as second:
        harness.slack.post_webhook(hook, MESSAGE)
    assert first.value.retry_after == second.value.retry_after == 17
    assert harness.posted() == []
    harness.slack.post(token, "U0DANA", MESSAGE)  # and after the wait it goes
    assert len(harness.posted()) == 1


def test_a_removed_webhook_is_retry_later(harness: Harness) -> None:
    hook = harness.world.webhook_url(TEAM)
    harness.world.remove_webhook(hook)
    with pytest.raises(SlackRetryLater, match="404"):
        harness.slack.post_webhook(hook, MESSAGE)


def test_a_revoked_or_unknown_token_is_revoked(harness: Harness) -> None:
    token = harness.world.bot_token(TEAM)
    harness.world.revoke(token)
    with pytest.raises(SlackTokenRevoked, match="token_revoked"):
        harness.slack.post(token, "U0DANA", MESSAGE)
    with pytest.raises(SlackTokenRevoked, match="invalid_auth"):
        harness.slack.post("xoxb-never-issued", "U0DANA", MESSAGE)
    with pytest.raises(SlackTokenRevoked, match="token_revoked"):
        harness.slack.team_of(token)
    with pytest.raises(SlackTokenRevoked, match="invalid_auth"):
        harness.slack.team_of("xoxb-never-issued")
    assert harness.posted() == []


def test_blocks_slack_cannot_read_are_refused(harness: Harness) -> None:
    token = harness.world.bot_token(TEAM)
    bad = SlackMessage("x", ({"type": "section", "text": {"type": "html", "text": "<b>"}},))
    with pytest.raises(SlackRefused, match="invalid_blocks"):
        harness.slack.post(token, "U0DANA", bad)
    long_label = {
        "type": "actions",
        "elements": [
            {
                "type": "button",
                "action_id": "a",
                "text": {"type": "plain_text", "text": "x" * 76},
                "value": "v",
            }
        ],
    }
    with pytest.raises(SlackRefused):
        harness.slack.post(token, "U0DANA", SlackMessage("x", (long_label,)))
    assert harness.posted() == []


def test_slack_not_answering_is_retry_later() -> None:
    adapter = SlackAdapter(f"http://127.0.0.1:{closed_port()}/api/", timeout=2)
    with pytest.raises(SlackRetryLater):
        adapter.post("xoxb-x", "U0DANA", MESSAGE)
    with pytest.raises(SlackRetryLater):
        adapter.post_webhook(f"http://127.0.0.1:{closed_port()}/services/T/B/x", MESSAGE)
