"""The ``notify`` schedule end to end: Cloud Scheduler's run fans out to the orgs with
something to tell (migration 0054's audience: not the others), one task each on the send
queue, named by the minute and the org; the real send function runs it and the mail and the
Slack message leave once, however often the task is delivered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from colony.contracts.lifecycle import ScheduleRun
from colony.flows.tenants import schedules
from colony.registry.functions import SEND_QUEUE
from colony.runtime.deps import set_deps_for_tests
from colony.testing.slack_server import SlackServer
from colony.testing.smtp_server import SmtpServer
from tests.apps import registered_app
from tests.conftest import PgDB
from tests.notify_world import ORG, World, make_world


@pytest.fixture
def world(
    testdb: PgDB,
    tmp_path: Path,
    smtp: SmtpServer,
    monkeypatch: pytest.MonkeyPatch,
    no_ambient_config: None,
) -> Iterator[World]:
    with SlackServer() as slack:
        env = {"COLONY_SLACK_API_URL": slack.api_url}
        w = make_world(testdb.app(), tmp_path, smtp, slack, **env)
        set_deps_for_tests(w.deps)
        try:
            yield w
        finally:
            set_deps_for_tests(None)


def test_the_schedule_serves_the_orgs_with_news_and_the_send_function_tells_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = schedules.run(world.deps, ScheduleRun(name="notify"), scheduled="2026-11-30T09:00:00Z")
    assert quiet["enqueued"] == 0  # nothing to tell anyone yet
    world.connect_slack()
    world.slack_user("user_alice", "U0ALICE")
    world.choose("user_alice", items_waiting="slack")
    world.item("Lease costs", world.contact())
    ran = schedules.run(world.deps, ScheduleRun(name="notify"), scheduled="2026-11-30T09:01:00Z")
    assert ran["enqueued"] == 1  # org_alpha; org_beta has nothing to tell
    (task,) = [t for t in world.deps.transport.tasks.values() if t.queue == SEND_QUEUE]
    assert task.task_id == f"notify-20261130T0901-{ORG}"
    send = registered_app("send", monkeypatch)
    answers = [send.post("/", data=task.body, content_type="application/json") for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].get_json()["sent"] == {"sent": 2}
    assert answers[1].get_json()["sent"] == {}  # a redelivered task tells nobody twice
    assert len(world.slack_posts("U0ALICE")) == 1
    assert len(world.mails_to("bob@alpha.example")) == 1
    assert (
        schedules.run(world.deps, ScheduleRun(name="notify"), scheduled="2026-11-30T09:02:00Z")[
            "enqueued"
        ]
        == 0
    )  # and the org leaves the audience once all is told
