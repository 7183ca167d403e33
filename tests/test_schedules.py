"""Schedules that serve every org (issue 17): one Cloud Scheduler job per kind of recurring
work fans out to one task per org it serves, so an org born through the Clerk webhook is
served from its first day and an org being erased is not; the reply mailbox is polled by its
own schedule (issue 18).

Real parts: embedded PostgreSQL (the owner function of migration 0026 lists the orgs), the
data-lifecycle, daily-brief, reembed and clerk-webhook functions loaded from their real
``main.py`` by functions-framework, each org's task delivered to its target as Cloud Tasks
would deliver it, the real IMAP adapter over TCP. Stood in: Cloud Scheduler (a POST with its
``X-CloudScheduler-ScheduleTime`` header) and Cloud Tasks (``InlineTransport`` keeps each
named task once, as the conformance suite holds every transport to); the IMAP server
(``colony.testing.imap_server``); Notion (``colony.testing.notion_server``: the notion org's
token is its workspace's, as the reconciliation proves again before it runs).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, get_args

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.contracts.lifecycle import ScheduleName
from colony.flows.outbound import held_mail, sending
from colony.flows.tenants import schedules
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.registry.functions import QUEUES
from colony.registry.schedules import SCHEDULES
from colony.runtime.deps import Deps, set_deps_for_tests
from colony.runtime.notion_clients import secret_store
from colony.settings import Settings
from colony.store import fetch_all
from colony.testing.imap_server import ImapServer
from colony.testing.inline import FIXED_NOW, InlineTransport, Task, local_deps
from colony.testing.notion_server import NotionServer
from tests.apps import registered_app
from tests.conftest import APP_ROLE, PgDB
from tests.test_clerk_webhook import SECRET as CLERK_SECRET
from tests.test_clerk_webhook import event, svix_headers
from tests.test_imap_replies import Accepting, reply
from tests.test_sending import ORG, SETTINGS, approved_message

PLAIN, NOTION, DRIVE, ERASING = "org_plain", "org_notion", "org_drive", "org_erasing"
SLOT = "2026-11-30T03:30:00Z"  # before FIXED_NOW (09:00), as a run is
# the hourly daily-brief run at 06:00 UTC: the default brief time of an org in UTC
BRIEF_SLOT = "2026-11-30T06:00:00Z"


@dataclass
class Env:
    testdb: PgDB
    deps: Deps
    transport: InlineTransport
    apps: dict[str, Any]

    def fire(self, name: str, slot: str | None = SLOT) -> Any:
        """What Cloud Scheduler posts for job ``name`` at ``slot``."""
        headers = {"X-CloudScheduler-ScheduleTime": slot} if slot else {}
        body = {"task": {"kind": "schedule", "name": name}}
        return self.apps["data-lifecycle"].post("/", json=body, headers=headers)

    def tasks(self, queue: str | None = None) -> list[Task]:
        return [t for t in self.transport.tasks.values() if queue in (None, t.queue)]

    def deliver(self, task: Task) -> Any:
        """A task's HTTP request to its queue's target, as Cloud Tasks makes it."""
        assert QUEUES[task.queue].target == task.target
        return self.apps[task.target].post(
            "/", data=task.body, headers={"Content-Type": "application/json"}
        )


def org(db: Any, org_id: str) -> None:
    with db.transaction(org_id) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org_id, org_id))


@pytest.fixture
def env(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[Env]:
    db = testdb.app()
    for org_id in (PLAIN, NOTION, DRIVE, ERASING):
        org(db, org_id)
    with db.transaction(NOTION) as cur:
        cur.execute(
            "INSERT INTO notion_workspaces (workspace_id, org_id, secret_name, domains)"
            " VALUES ('ws-1', %s, 'colony-notion-ws-1', '{\"db1\": \"KC-01\"}')",
            (NOTION,),
        )
    with db.transaction(DRIVE) as cur:
        cur.execute(
            "INSERT INTO drive_channels (id, org_id, folder_id, resource_id, expires_at)"
            " VALUES ('ch-1', %s, 'folder1', 'res-1', %s)",
            (DRIVE, FIXED_NOW + timedelta(days=2)),
        )
        cur.execute(  # proven when it was watched (flows.recordings.drive_folders)
            "INSERT INTO resource_claims (org_id, kind, resource_id, method, claimed_by)"
            " VALUES (%s, 'drive_folder', 'folder1', 'marker', 'u1')",
            (DRIVE,),
        )
    with db.transaction(ERASING) as cur:
        cur.execute(
            "INSERT INTO erasure_jobs (target_org, requested_by) VALUES (%s, 'test')", (ERASING,)
        )
    with NotionServer() as notion:
        notion.add_token("secret_ws_1_token", "ws-1")
        settings = Settings.from_env(
            {
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
                "COLONY_DATA_DIR": str(tmp_path),  # the local secret store's files
                "COLONY_EMBEDDING_DIM": str(testdb.dim),
                "COLONY_CLERK_WEBHOOK_SECRET": CLERK_SECRET,
                "COLONY_NOTION_BASE_URL": notion.url,
            }
        )
        secret_store(settings).put("colony-notion-ws-1", "secret_ws_1_token")
        transport = InlineTransport()
        # the brief's model: the offline provider, as make run's; its Knowledge Core: embedded
        llm, knowledge = llm_from_settings(settings, db), KnowledgeStore(db, OfflineHashEmbedder())
        deps = local_deps(settings, db, transport, llm, knowledge)
        set_deps_for_tests(deps)
        names = ("data-lifecycle", "daily-brief", "reembed", "clerk-webhook")
        yield Env(testdb, deps, transport, {n: registered_app(n, monkeypatch) for n in names})
        set_deps_for_tests(None)


def bodies(tasks: list[Task]) -> list[Any]:
    return sorted((json.loads(t.body) for t in tasks), key=json.dumps)


def test_the_body_names_exactly_the_registered_schedules() -> None:
    assert set(get_args(ScheduleName)) == set(SCHEDULES)


def test_each_schedule_reaches_the_orgs_it_serves_once_per_run(env: Env) -> None:
    answer = env.fire("retention")
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json() == {
        "schedule": "retention",
        "slot": "2026-11-30T03:30:00+00:00",
        "enqueued": 3,
        "next_page": None,
    }
    # every live org, and not the one whose erasure is open
    assert bodies(env.tasks()) == [
        {"task": {"kind": "retention", "org_id": o}} for o in (DRIVE, NOTION, PLAIN)
    ]
    # Cloud Scheduler retries the same run (same scheduled time): no task twice
    assert env.fire("retention").status_code == 200 and len(env.tasks()) == 3
    # the next day's run is a run of its own
    assert env.fire("retention", "2026-12-01T03:30:00Z").get_json()["enqueued"] == 3
    assert len(env.tasks()) == 6

    env.transport.tasks.clear()
    for name in ("notion-reconcile", "drive-renew"):
        assert env.fire(name).status_code == 200
    assert env.fire("daily-brief", BRIEF_SLOT).status_code == 200
    assert bodies(env.tasks(SCHEDULES["notion-reconcile"].queue)) == [
        {"kind": "notion.reconcile", "org_id": NOTION}
    ]
    drive_renew = [t for t in env.tasks() if b"drive.renew" in t.body]
    assert bodies(drive_renew) == [{"task": {"kind": "drive.renew", "org_id": DRIVE}}]
    assert bodies(env.tasks(SCHEDULES["daily-brief"].queue)) == [
        {"org_id": o, "brief_date": "2026-11-30"} for o in (DRIVE, NOTION, PLAIN)
    ]


def test_every_org_task_is_one_its_target_function_accepts(env: Env) -> None:
    for name in ("retention", "notion-reconcile", "drive-renew"):
        env.fire(name)
    env.fire("daily-brief", BRIEF_SLOT)
    fanned_out = env.tasks()
    assert len(fanned_out) == 3 + 1 + 1 + 3
    for task in fanned_out:
        answer = env.deliver(task)
        assert answer.status_code == 200, (task.body, answer.get_json())
    with env.deps.db.transaction(PLAIN) as cur:
        briefs = fetch_all(cur, "SELECT brief_date FROM daily_briefs")
    assert [r["brief_date"].isoformat() for r in briefs] == ["2026-11-30"]
    with env.deps.db.transaction(NOTION) as cur:
        runs = fetch_all(cur, "SELECT kind, workspace_id FROM notion_syncs")
    assert runs == [{"kind": "reconcile", "workspace_id": "ws-1"}]
    with env.deps.db.transaction(DRIVE) as cur:  # not due yet: kept as it is
        assert fetch_all(cur, "SELECT status FROM drive_channels") == [{"status": "active"}]


def test_an_org_created_through_clerk_is_served_from_its_first_run(env: Env) -> None:
    created = event("organization.created", org="org_newcomer", name="Newcomer")
    hook = env.apps["clerk-webhook"].post(
        "/", data=created, content_type="application/json", headers=svix_headers(created, "m1")
    )
    assert hook.status_code == 200, hook.get_json()
    env.fire("daily-brief", BRIEF_SLOT)
    assert {json.loads(t.body)["org_id"] for t in env.tasks()} == {
        DRIVE,
        NOTION,
        PLAIN,
        "org_newcomer",
    }


def test_a_long_list_of_orgs_is_worked_through_a_page_at_a_time(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        org(env.deps.db, f"org_page_{n}")
    monkeypatch.setattr(schedules, "PAGE", 3)
    first = env.fire("retention").get_json()
    assert first["enqueued"] == 3 and first["next_page"] is not None
    delivered: set[str] = set()
    while True:  # each next page is a task on the lifecycle queue, delivered in turn
        todo = [t for t in env.tasks() if b'"schedule"' in t.body and t.task_id not in delivered]
        if not todo:
            break
        for task in todo:
            delivered.add(task.task_id)
            assert env.deliver(task).status_code == 200
    tasks = [json.loads(t.body)["task"] for t in env.tasks()]
    orgs = [t["org_id"] for t in tasks if t["kind"] == "retention"]
    assert sorted(orgs) == sorted([DRIVE, NOTION, PLAIN] + [f"org_page_{n}" for n in range(5)])
    assert len(delivered) == 2  # 8 orgs, 3 a page: two next pages, each created once


def test_a_manual_run_takes_the_current_minute_and_a_bad_header_is_refused(env: Env) -> None:
    manual = env.fire("retention", slot=None).get_json()
    assert manual["slot"] == FIXED_NOW.replace(second=0, microsecond=0).isoformat()
    bad = env.fire("retention", slot="yesterday")
    assert bad.status_code == 400 and "RFC 3339" in bad.get_json()["error"]["message"]
    unknown = env.apps["data-lifecycle"].post(
        "/", json={"task": {"kind": "schedule", "name": "everything"}}
    )
    assert unknown.status_code in (400, 422) and "name" in unknown.get_json()["error"]["message"]


def test_the_reply_mailbox_schedule_stores_each_reply_against_its_message(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = testdb.app()
    org(db, ORG)
    with ImapServer() as server:
        settings = Settings.from_env(
            {
                **SETTINGS,
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
                "COLONY_REPLY_MAILBOX_HOST": server.host,
                "COLONY_REPLY_MAILBOX_PORT": str(server.port),
                "COLONY_REPLY_MAILBOX_USERNAME": server.username,
                "COLONY_REPLY_MAILBOX_PASSWORD": server.password,
                "COLONY_REPLY_MAILBOX_TLS": "false",
            }
        )
        transport = InlineTransport()
        knowledge = KnowledgeStore(db, OfflineHashEmbedder())  # approvals feed KC-08
        deps = local_deps(settings, db, transport, knowledge=knowledge, sender=Accepting())
        set_deps_for_tests(deps)
        try:
            outbox_id = approved_message(deps, "dana@granitepeak.example")
            assert sending.send(deps, ORG, outbox_id)["status"] == "sent"
            server.deliver(reply(f"<{outbox_id}@zoomprop.example>", "Yes, call me.", "<r@gp>"))
            lifecycle = registered_app("data-lifecycle", monkeypatch)
            fired = lifecycle.post(
                "/",
                json={"task": {"kind": "schedule", "name": "replies-poll"}},
                headers={"X-CloudScheduler-ScheduleTime": "2026-11-30T09:05:00Z"},
            )
            assert fired.status_code == 200 and fired.get_json()["enqueued"] == 1
            (poll,) = [t for t in transport.tasks.values() if b"replies.poll" in t.body]
            polled = lifecycle.post(
                "/", data=poll.body, headers={"Content-Type": "application/json"}
            )
            assert polled.get_json() == {
                "status": "polled",
                "stored": 1,
                "duplicate": 0,
                "rejected": 0,
                # no Resend key: nothing held to read, and nothing can read it
                "held": {"status": "waiting", "waiting": 0, "reason": held_mail.NO_READER},
            }
            assert server.seen == [1]
        finally:
            set_deps_for_tests(None)
    with db.transaction(ORG) as cur:
        assert [r["status"] for r in fetch_all(cur, "SELECT status FROM outbox")] == ["replied"]
        assert len(fetch_all(cur, "SELECT id FROM replies")) == 1


def test_without_a_reply_mailbox_the_poll_says_so(env: Env) -> None:
    answer = env.apps["data-lifecycle"].post("/", json={"task": {"kind": "replies.poll"}})
    assert answer.status_code == 200
    assert answer.get_json()["status"] == "skipped"
    assert "COLONY_REPLY_MAILBOX_HOST" in answer.get_json()["reason"]


def research_job(
    db: Any, org_id: str, domain: str, status: str, idle: str, lease: str | None
) -> None:
    """A research pass last touched ``idle`` ago (a Postgres interval), its lease ending in
    ``lease`` from now (None: no lease); a ``done`` one ended then."""
    ended = "researched" if status == "done" else None
    with db.transaction(org_id) as cur:
        cur.execute(
            "INSERT INTO research_jobs (org_id, domain, status, outcome, requested_by,"
            " touched_at, lease_until, finished_at) VALUES (%s, %s, %s, %s, 'test',"
            " now() - %s::interval, now() + %s::interval,"
            " CASE WHEN %s = 'done' THEN now() - %s::interval END)",
            (org_id, domain, status, ended, idle, lease, status, idle),
        )


def test_the_research_sweep_wakes_each_stalled_pass_once(env: Env) -> None:
    """A pass whose tasks were lost (issue 33): no task has held or touched it for half an
    hour. The sweep serves only the orgs with one, and each org's task wakes its own."""
    db = env.deps.db
    research_job(db, PLAIN, "lost.example", "running", "31 minutes", None)
    research_job(db, PLAIN, "lapsed.example", "running", "2 hours", "-1 minute")
    research_job(db, PLAIN, "recent.example", "running", "29 minutes", None)
    research_job(db, PLAIN, "held.example", "running", "2 hours", "5 minutes")
    research_job(db, PLAIN, "ended.example", "done", "2 hours", None)
    research_job(db, DRIVE, "other.example", "running", "1 hour", None)
    research_job(db, ERASING, "gone.example", "running", "1 hour", None)

    assert env.fire("research-sweep").get_json()["enqueued"] == 2
    sweeps = env.tasks(SCHEDULES["research-sweep"].queue)
    assert bodies(sweeps) == [
        {"task": {"kind": "research.sweep", "org_id": o}} for o in (DRIVE, PLAIN)
    ]
    answers = {json.loads(t.body)["task"]["org_id"]: env.deliver(t).get_json() for t in sweeps}
    assert answers == {PLAIN: {"org_id": PLAIN, "woken": 2}, DRIVE: {"org_id": DRIVE, "woken": 1}}
    research = sorted(t.task_id for t in env.tasks("colony-research"))
    assert research == [
        f"research-{DRIVE}-other.example-1-1",
        f"research-{PLAIN}-lapsed.example-1-1",
        f"research-{PLAIN}-lost.example-1-1",
    ]
    # woken passes are touched: the next run serves no org, and the tasks stand as they were
    assert env.fire("research-sweep", "2026-11-30T04:20:00Z").get_json()["enqueued"] == 0
    assert len(env.tasks("colony-research")) == 3
