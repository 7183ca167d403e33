"""The HubSpot backfill and the stage mapping (issue 36, inbound), from outside: the admin and
crm functions loaded from their real ``main.py``, the real PostgreSQL, the HubSpot
stand-in over HTTP through the official client, orgs connected through OAuth.

Alpha holds portal 101 (30 companies, 250 contacts: 8 without email, 40 deals: 2 in the
unmapped "Partnerships" pipeline); beta holds portal 202. Beta's admin cannot read or edit
alpha's mapping, nor start or read alpha's backfill.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from colony.flows.crm import backfill
from colony.runtime.crm_access import HubSpotAccess
from colony.runtime.deps import set_deps_for_tests
from colony.runtime.faults import Faults, InjectedFault
from colony.testing.hubspot_accounts import Limits
from colony.testing.hubspot_seed import seeded_world
from colony.testing.hubspot_server import HubSpotServer
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import org_settings, registered_app
from tests.conftest import PgDB
from tests.test_crm_connect import ALPHA, BETA, Clock, World, connect, hubspot_env

pytestmark = pytest.mark.covers("fn:admin", "fn:crm")

DEFAULT_STAGES = [
    ("appointmentscheduled", "discovery"),
    ("qualifiedtobuy", "discovery"),
    ("presentationscheduled", "demo"),
    ("decisionmakerboughtin", "proposal"),
    ("contractsent", "negotiation"),
    ("closedwon", "closed_won"),
    ("closedlost", "closed_lost"),
]


@dataclass
class Sync(World):
    lifecycle: Any  # the data-lifecycle function (the schedules' fan-out)
    crm: Any  # the crm function (HubSpot's webhook and the sync's tasks)
    transport: InlineTransport

    def as_admin(self, method: str, path: str, org: str, body: Any = None) -> Any:
        return self.call(method, f"/orgs/{org}/crm/hubspot{path}", self.token(org), body)

    def map_default(self, org: str) -> None:
        stages = [
            {"pipeline_id": "default", "stage_id": s, "stage": ours} for s, ours in DEFAULT_STAGES
        ]
        answer = self.as_admin("PUT", "/stages", org, {"stages": stages})
        assert answer.status_code == 200, answer.get_json()

    def run_tasks(self) -> list[Any]:
        """Deliver every queued task to its function (as Cloud Tasks does), until none is
        left; the answers."""
        answers, done = [], set()
        while pending := [n for n in self.transport.tasks if n not in done]:
            for name in pending:
                done.add(name)
                task = self.transport.tasks[name]
                app = self.crm if task.target == "crm" else self.lifecycle
                answers.append(app.post("/", data=task.body, content_type="application/json"))
        return answers

    def count(self, sql: str) -> int:
        return int(self.rows(sql)[0]["n"])


@pytest.fixture(name="sync")
def sync_fixture(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[Sync]:
    """Two orgs, two portals of the stand-in, the admin and data-lifecycle functions."""
    alpha = seeded_world(1, companies=30, contacts=250, deals=40, portal_id="101")
    beta = seeded_world(2, portal_id="202")
    with HubSpotServer(alpha, beta) as hubspot:
        settings = org_settings(testdb, tmp_path, ALPHA, BETA, **hubspot_env(hubspot))
        clock, transport = Clock(), InlineTransport()
        deps = local_deps(settings, testdb.app(), transport, clock=clock)
        set_deps_for_tests(deps)
        api = registered_app("admin", monkeypatch)
        lifecycle = registered_app("data-lifecycle", monkeypatch)
        crm = registered_app("crm", monkeypatch)
        yield Sync(testdb, tmp_path, hubspot, api, deps, clock, lifecycle, crm, transport)
        set_deps_for_tests(None)


def test_a_backfill_brings_contacts_companies_and_deals_in_and_keeps_unmapped_deals(
    sync: Sync,
) -> None:
    assert connect(sync, ALPHA, "101").status_code == 200
    sync.map_default(ALPHA)
    started = sync.as_admin("POST", "/backfill", ALPHA, {})
    assert started.status_code == 202, started.get_json()
    job = started.get_json()
    assert job["status"] == "queued" and job["kind"] == "crm"
    # starting again is the same job (one backfill per org at a time)
    assert sync.as_admin("POST", "/backfill", ALPHA, {}).get_json()["id"] == job["id"]
    answers = sync.run_tasks()
    assert all(a.status_code == 200 for a in answers), [a.get_json() for a in answers]
    done = sync.as_admin("GET", "/backfill", ALPHA).get_json()
    assert done["status"] == "completed", done
    assert (done["rows_done"], done["rows_created"], done["rows_rejected"]) == (320, 318, 2)
    assert sync.count("SELECT count(*) AS n FROM contacts WHERE org_id = 'org_alpha'") == 250
    assert sync.count("SELECT count(*) AS n FROM deals WHERE org_id = 'org_alpha'") == 38
    # every contact is at its company, every deal with its contact
    (ada,) = sync.rows(
        "SELECT c.name, c.email, c.company, c.company_domain FROM contacts c"
        " JOIN crm_links l ON l.entity_id = c.id WHERE l.remote_id = '1001'"
    )
    world = sync.hubspot.world("101")
    person, firm = world.get("contacts", "1001"), world.get("companies", "5001")
    assert person is not None and firm is not None
    assert ada["email"] == person.properties["email"]
    assert (ada["company"], ada["company_domain"]) == (
        firm.properties["name"],
        firm.properties["domain"],
    )
    assert sync.count("SELECT count(*) AS n FROM deals WHERE contact_id IS NULL") == 0
    # a contact without email is kept, and noted; an unmapped deal is kept, and flagged
    assert sync.count("SELECT count(*) AS n FROM contacts WHERE email IS NULL") == 8
    errors = sync.rows("SELECT field, reason, value FROM import_errors ORDER BY row_number")
    assert [e["field"] for e in errors].count("email") == 8
    held = [e for e in errors if e["field"] == "dealstage"]
    assert len(held) == 2 and "partnerships/partner_intro" in held[0]["reason"]
    status = sync.as_admin("GET", "", ALPHA).get_json()
    assert status["unmapped_stages"] == [{"stage": "partnerships/partner_intro", "deals": 2}]
    stages = sync.as_admin("GET", "/stages", ALPHA).get_json()
    assert stages["unmapped"] == [
        {"pipeline_id": "partnerships", "stage_id": "partner_intro", "deals": 2}
    ]
    # mapping the stage releases the deals kept in it
    mapped = sync.as_admin(
        "PUT",
        "/stages",
        ALPHA,
        {"stages": [{"pipeline_id": "partnerships", "stage_id": "partner_intro", "stage": "demo"}]},
    )
    assert mapped.status_code == 200 and mapped.get_json()["released"] == 2
    assert mapped.get_json()["unmapped"] == []
    assert sync.count("SELECT count(*) AS n FROM deals WHERE stage = 'demo'") >= 2
    assert sync.count("SELECT count(*) AS n FROM deals") == 40
    assert ("effect", "crm.stages", None) in sync.audit(ALPHA)
    # a re-run changes nothing: no twin of anyone
    again = sync.as_admin("POST", "/backfill", ALPHA, {})
    assert again.get_json()["id"] != job["id"]
    sync.run_tasks()
    assert sync.count("SELECT count(*) AS n FROM contacts") == 250
    assert sync.count("SELECT count(*) AS n FROM deals") == 40


def test_another_org_cannot_read_or_edit_the_mapping_or_the_backfill(sync: Sync) -> None:
    assert connect(sync, ALPHA, "101").status_code == 200
    sync.map_default(ALPHA)
    for method, what, body in (
        ("GET", "/stages", None),
        (
            "PUT",
            "/stages",
            {"stages": [{"pipeline_id": "default", "stage_id": "x", "stage": None}]},
        ),
        ("POST", "/backfill", {}),
        ("GET", "/backfill", None),
    ):
        answer = sync.call(method, f"/orgs/{ALPHA}/crm/hubspot{what}", sync.token(BETA), body)
        assert answer.status_code == 403, (method, what)
    assert sync.transport.tasks == {}
    assert sync.count("SELECT count(*) AS n FROM crm_stage_map") == 7
    # beta's own: nothing to see, nothing connected to backfill
    assert sync.as_admin("GET", "/stages", BETA).get_json()["stages"] == []
    assert sync.as_admin("POST", "/backfill", BETA, {}).status_code == 404
    assert sync.as_admin("GET", "/backfill", BETA).status_code == 404
    bad = sync.as_admin("PUT", "/stages", ALPHA, {"stages": [{"pipeline_id": "default"}]})
    assert bad.status_code == 422
    wrong = sync.as_admin(
        "PUT",
        "/stages",
        ALPHA,
        {"stages": [{"pipeline_id": "default", "stage_id": "closedwon", "stage": "won"}]},
    )
    assert wrong.status_code == 422


class CrashOnce(Faults):
    """Crashes the page's transaction once, at one record (the test's pick)."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key, self.fired = key, False

    def check(self, point: str, key: str) -> None:
        if point == "crm.backfill.record" and key.endswith(self.key) and not self.fired:
            self.fired = True
            raise InjectedFault(f"injected fault at {point}")


def _run(sync: Sync, org: str, job: str, access: HubSpotAccess, deps: Any) -> dict[str, Any]:
    return backfill.run_job(deps, access, org, job, schedule=False)


def test_a_backfill_interrupted_at_any_record_resumes_with_nothing_lost_or_twice(
    sync: Sync,
) -> None:
    assert connect(sync, ALPHA, "101").status_code == 200
    sync.map_default(ALPHA)
    crash = CrashOnce(":contacts:1160")  # the 60th contact of the second page
    deps = replace(sync.deps, faults=crash)
    job = backfill.start(deps, ALPHA, "user_1", schedule=False)
    access = HubSpotAccess(deps)
    with pytest.raises(InjectedFault):
        _run(sync, ALPHA, job["id"], access, deps)
    assert crash.fired
    mid = backfill.latest(deps, ALPHA)
    # the first page of contacts is in, nothing of the page that crashed
    assert mid["rows_done"] == 130 and mid["cursor"] == {"phase": "contacts", "after": "1101"}
    assert sync.count("SELECT count(*) AS n FROM contacts") == 100
    done = _run(sync, ALPHA, job["id"], access, deps)
    access.close()
    assert done["status"] == "completed"
    assert (done["rows_done"], done["rows_created"], done["rows_rejected"]) == (320, 318, 2)
    assert sync.count("SELECT count(*) AS n FROM contacts") == 250
    assert sync.count("SELECT count(*) AS n FROM crm_links WHERE object_type = 'contact'") == 250
    assert sync.count("SELECT count(*) AS n FROM import_errors") == 10  # 8 emails, 2 stages


def test_a_revoked_token_pauses_the_backfill_and_reconnecting_resumes_it(sync: Sync) -> None:
    assert connect(sync, ALPHA, "101").status_code == 200
    sync.map_default(ALPHA)
    job = backfill.start(sync.deps, ALPHA, "user_1", schedule=False)
    access = HubSpotAccess(sync.deps)
    first = backfill.run_job(sync.deps, access, ALPHA, job["id"], pages=2, schedule=False)
    assert first["rows_done"] == 130
    sync.hubspot.accounts.uninstall("101")  # the portal removed the app
    paused = backfill.run_job(sync.deps, access, ALPHA, job["id"], schedule=False)
    assert paused["status"] == "paused" and "reconnect" in paused["failure"]
    status = sync.as_admin("GET", "", ALPHA).get_json()
    assert status["status"] == "paused"  # the org is told, on its connection and audit log
    assert any(a == "crm.pause" for _, a, _ in sync.audit(ALPHA))
    refused = sync.as_admin("POST", "/backfill", ALPHA, {})
    assert refused.status_code == 409  # reconnect first: it says so
    assert connect(sync, ALPHA, "101").status_code == 200
    resumed = sync.as_admin("POST", "/backfill", ALPHA, {}).get_json()
    assert resumed["id"] == job["id"] and resumed["status"] == "queued"
    assert resumed["rows_done"] == 130  # from where it stopped
    finished = backfill.run_job(sync.deps, access, ALPHA, job["id"], schedule=False)
    access.close()
    assert finished["status"] == "completed" and finished["rows_done"] == 320
    assert sync.count("SELECT count(*) AS n FROM contacts") == 250


def test_a_backfill_of_an_org_that_disconnected_stops_and_is_not_retried(sync: Sync) -> None:
    assert connect(sync, ALPHA, "101").status_code == 200
    sync.map_default(ALPHA)
    assert sync.as_admin("POST", "/backfill", ALPHA, {}).status_code == 202
    off = sync.call("POST", f"/orgs/{ALPHA}/crm/hubspot/disconnect", sync.token(ALPHA), {})
    assert off.status_code == 200
    (answer,) = sync.run_tasks()  # the queued task runs after the disconnect
    assert answer.status_code == 200, answer.get_json()  # done with: no retry
    job = answer.get_json()
    assert job["status"] == "paused" and "not connected" in job["failure"]
    assert sync.count("SELECT count(*) AS n FROM contacts") == 0


def test_hubspots_limit_reschedules_the_task_instead_of_sleeping(
    sync: Sync, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert connect(sync, ALPHA, "101").status_code == 200
    sync.map_default(ALPHA)
    sync.hubspot.accounts.limits = Limits(burst=3)  # a 429 storm after three calls
    job = backfill.start(sync.deps, ALPHA, "user_1", schedule=False)
    access = HubSpotAccess(sync.deps)
    waiting = backfill.run_job(sync.deps, access, ALPHA, job["id"])
    assert waiting["status"] == "running" and waiting["waiting_seconds"] > 0
    (task,) = sync.transport.tasks.values()
    assert task.delay_seconds >= 1 and json.loads(task.body)["task"]["kind"] == "crm.backfill"
    assert sync.hubspot.clock.slept == []  # nothing slept: the task waits on the queue
    sync.hubspot.clock.advance(task.delay_seconds)
    sync.hubspot.accounts.limits = Limits()
    done = backfill.run_job(sync.deps, access, ALPHA, job["id"], schedule=False)
    access.close()
    assert done["status"] == "completed" and done["rows_done"] == 320
