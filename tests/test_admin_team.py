"""The admin function's team routes (issue 35), loaded from its real ``main.py`` by the
functions-framework, against the real PostgreSQL: an admin sets the time zone, brief time,
backup, escalation window and assignment rules (a zone that does not exist, or a person who
is not an active member, is a 422 naming it); reassigns a prospect or a deal (audited; a user
of another org refused); assigns the unowned by the rules (territory first, round robin for
the rest). Another org's admin, a member, or no token is refused, recorded, changing
nothing."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from colony.runtime.deps import set_deps_for_tests
from colony.store.tenants import members
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import org_settings, registered_app, session_token
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("fn:admin")

ALPHA, BETA = "org_alpha", "org_beta"
TEAM = {
    "time_zone": "America/New_York",
    "brief_time": "07:30",
    "backup_user_id": "user_cy",
    "escalate_after_hours": 8,
    "assignment": {
        "rules": [{"field": "territory", "values": ["EMEA"], "members": ["user_ben", "user_cy"]}]
    },
}


@dataclass
class Api:
    db: PgDB
    data_dir: Path
    client: Any
    deps: Any

    def token(self, org: str, role: str | None = "org:admin", user: str = "user_ana") -> str:
        return session_token(self.data_dir, org, user, role)

    def call(self, method: str, path: str, token: str | None, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.client.open(path, method=method, json=body, headers=headers)

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return self.db.owner_rows(sql)

    def state(self) -> tuple[Any, ...]:
        return (
            self.rows("SELECT org_id, time_zone, backup_user_id FROM org_team ORDER BY 1"),
            self.rows("SELECT org_id, id, owner_id FROM contacts ORDER BY 1, 2"),
            self.rows("SELECT org_id, id, owner_id FROM deals ORDER BY 1, 2"),
            self.rows("SELECT org_id, action FROM audit_log ORDER BY id"),
        )


@pytest.fixture
def api(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[Api]:
    settings = org_settings(testdb, tmp_path, ALPHA, BETA)
    deps = local_deps(settings, testdb.app(), InlineTransport())
    with deps.db.transaction(ALPHA) as cur:
        members.join(cur, ALPHA, "user_ana", "org:admin", "ana@alpha.example", "Ana")
        members.join(cur, ALPHA, "user_ben", "org:member", "ben@alpha.example", "Ben")
        members.join(cur, ALPHA, "user_cy", "org:member", "cy@alpha.example", "Cy")
        members.join(cur, ALPHA, "user_dee", "org:member", "dee@alpha.example", "Dee")
        members.leave(cur, "user_dee")
    with deps.db.transaction(BETA) as cur:
        members.join(cur, BETA, "user_zed", "org:admin", "zed@beta.example", "Zed")
    set_deps_for_tests(deps)
    yield Api(testdb, tmp_path, registered_app("admin", monkeypatch), deps)
    set_deps_for_tests(None)


def _contacts(api: Api, org: str, territories: list[str | None]) -> list[str]:
    ids = []
    with api.deps.db.transaction(org) as cur:
        for i, territory in enumerate(territories):
            enrichment = json.dumps({"territory": territory} if territory else {})
            cur.execute(
                "INSERT INTO contacts (org_id, id, name, company, enrichment)"
                " VALUES (%s, %s, %s, 'Acme', %s::jsonb)",
                (org, f"{org}_c{i:02d}", f"Person {i}", enrichment),
            )
            ids.append(f"{org}_c{i:02d}")
    return ids


def test_an_admin_sets_the_team_and_bad_settings_are_a_422_naming_them(api: Api) -> None:
    token = api.token(ALPHA)
    defaults = api.call("GET", f"/orgs/{ALPHA}/team", token)
    assert defaults.status_code == 200 and defaults.get_json() == {
        "time_zone": "Etc/UTC",
        "brief_time": "06:00",
        "backup_user_id": None,
        "escalate_after_hours": None,
        "assignment": {"rules": []},
    }
    put = api.call("PUT", f"/orgs/{ALPHA}/team", token, TEAM)
    assert put.status_code == 200, put.get_json()
    assert put.get_json() == TEAM
    assert api.call("GET", f"/orgs/{ALPHA}/team", token).get_json() == TEAM
    before = api.state()
    bad = {
        "time_zone": ({**TEAM, "time_zone": "Mars/Olympus_Mons"}, "Mars/Olympus_Mons"),
        "backup left": ({**TEAM, "backup_user_id": "user_dee"}, "backup_user_id"),
        "backup of another org": ({**TEAM, "backup_user_id": "user_zed"}, "'user_zed'"),
        "rule member": (
            {
                **TEAM,
                "assignment": {
                    "rules": [{**TEAM["assignment"]["rules"][0], "members": ["user_nobody"]}]
                },
            },
            "assignment.rules[0].members",
        ),
        "rule field": (
            {
                **TEAM,
                "assignment": {"rules": [{**TEAM["assignment"]["rules"][0], "field": "salary"}]},
            },
            "assignment.rules[0].field",
        ),
        "escalation without backup": (
            {**TEAM, "backup_user_id": None},
            "escalate_after_hours",
        ),
        "unknown field": ({**TEAM, "colour": "blue"}, "colour"),
    }
    for case, (body, named) in bad.items():
        answer = api.call("PUT", f"/orgs/{ALPHA}/team", token, body)
        assert answer.status_code == 422, (case, answer.get_json())
        assert named in answer.get_json()["error"]["message"], case
    assert api.state() == before


def test_reassigning_is_audited_and_refuses_anyone_outside_the_org(api: Api) -> None:
    (contact,) = _contacts(api, ALPHA, [None])
    token = api.token(ALPHA)
    body = {"subject": "contact", "id": contact, "owner": "user_ben"}
    first = api.call("POST", f"/orgs/{ALPHA}/owners", token, body)
    assert first.status_code == 200, first.get_json()
    assert first.get_json() == {
        "subject": "contact",
        "id": contact,
        "from": None,
        "to": "user_ben",
        "items": 0,
    }
    again = api.call("POST", f"/orgs/{ALPHA}/owners", token, {**body, "owner": "user_cy"})
    assert again.get_json()["from"] == "user_ben"
    entries = api.rows("SELECT event, actor, channel, action, detail FROM audit_log ORDER BY id")
    assert [(e["event"], e["actor"], e["channel"], e["action"]) for e in entries] == [
        ("assignment", "user_ana", "admin", "reassign")
    ] * 2
    assert entries[1]["detail"]["from"] == "user_ben" and entries[1]["detail"]["to"] == "user_cy"
    before = api.state()
    for owner, status in (("user_zed", 422), ("user_dee", 422), ("user_nobody", 422)):
        refused = api.call("POST", f"/orgs/{ALPHA}/owners", token, {**body, "owner": owner})
        assert refused.status_code == status, (owner, refused.get_json())
        assert owner in refused.get_json()["error"]["message"]
    missing = api.call("POST", f"/orgs/{ALPHA}/owners", token, {**body, "id": "nope"})
    assert missing.status_code == 404
    assert api.state() == before


def test_another_orgs_admin_a_member_and_no_token_are_refused_and_recorded(api: Api) -> None:
    (contact,) = _contacts(api, ALPHA, [None])
    stranger, member = api.token(BETA, user="user_zed"), api.token(ALPHA, role="org:member")
    before = api.state()
    calls = [
        ("GET", f"/orgs/{ALPHA}/team", None),
        ("PUT", f"/orgs/{ALPHA}/team", TEAM),
        ("GET", f"/orgs/{ALPHA}/members", None),
        ("POST", f"/orgs/{ALPHA}/members/sync", None),
        (
            "POST",
            f"/orgs/{ALPHA}/owners",
            {"subject": "contact", "id": contact, "owner": "user_zed"},
        ),
        ("POST", f"/orgs/{ALPHA}/owners/assign", None),
    ]
    refused = 0
    for method, path, body in calls:
        for token, status in ((stranger, 403), (member, 403), (None, 401)):
            answer = api.call(method, path, token, body)
            assert answer.status_code == status, (method, path, answer.get_json())
            refused += 1
    # from its own org, the stranger's admin cannot reach ALPHA's prospect either
    own = api.call(
        "POST",
        f"/orgs/{BETA}/owners",
        stranger,
        {"subject": "contact", "id": contact, "owner": "user_zed"},
    )
    assert own.status_code == 404
    assert api.state() == before
    assert len(api.rows("SELECT 1 FROM rejected_deliveries WHERE function = 'admin'")) == refused


def test_the_unowned_are_assigned_by_territory_then_round_robin(api: Api) -> None:
    token = api.token(ALPHA)
    assert api.call("PUT", f"/orgs/{ALPHA}/team", token, TEAM).status_code == 200
    emea = _contacts(
        api, ALPHA, ["EMEA", " emea ", "EMEA", "EMEA", None, "APAC", None, None, None, None]
    )
    with api.deps.db.transaction(ALPHA) as cur:
        cur.execute(
            "INSERT INTO deals (org_id, id, name, stage, contact_id)"
            " VALUES (%s, 'd_of_c00', 'A', 'lead', %s), (%s, 'd_alone', 'B', 'lead', NULL)",
            (ALPHA, emea[0], ALPHA),
        )
    answer = api.call("POST", f"/orgs/{ALPHA}/owners/assign", token)
    assert answer.status_code == 200 and answer.get_json() == {"contacts": 10, "deals": 2}
    owners = {r["id"]: r["owner_id"] for r in api.rows("SELECT id, owner_id FROM contacts")}
    # EMEA (any case, spaces aside) alternates between the rule's two members
    assert [owners[c] for c in emea[:4]] == ["user_ben", "user_cy", "user_ben", "user_cy"]
    # the rest round robin across every active person (Dee left: never given anything)
    rest = Counter(owners[c] for c in emea[4:])
    assert rest == Counter({"user_ana": 2, "user_ben": 2, "user_cy": 2})
    deals = {r["id"]: r["owner_id"] for r in api.rows("SELECT id, owner_id FROM deals")}
    # a deal takes its prospect's owner; one without a prospect is next in turn (after Cy)
    assert deals == {"d_of_c00": owners[emea[0]], "d_alone": "user_ana"}
    # round robin goes on where it stopped, in a later run too; another org's is untouched
    _contacts(api, BETA, [None])
    with api.deps.db.transaction(ALPHA) as cur:
        cur.execute(
            "INSERT INTO contacts (org_id, id, name, company) VALUES (%s, 'late', 'Late', 'Acme')",
            (ALPHA,),
        )
    later = api.call("POST", f"/orgs/{ALPHA}/owners/assign", token).get_json()
    assert later == {"contacts": 1, "deals": 0}
    assert api.rows("SELECT owner_id FROM contacts WHERE id = 'late'") == [{"owner_id": "user_ben"}]
    entries = api.rows(
        "SELECT actor, action, detail FROM audit_log WHERE action = 'assign_unowned' ORDER BY id"
    )
    assert [(e["actor"], e["detail"]) for e in entries] == [
        ("user_ana", {"contacts": 10, "deals": 2}),
        ("user_ana", {"contacts": 1, "deals": 0}),
    ]
    assert api.rows(f"SELECT owner_id FROM contacts WHERE org_id = '{BETA}'") == [
        {"owner_id": None}
    ]


def test_the_members_listing_shows_who_left(api: Api) -> None:
    listing = api.call("GET", f"/orgs/{ALPHA}/members", api.token(ALPHA)).get_json()
    assert [(m["user_id"], m["status"]) for m in listing["members"]] == [
        ("user_ana", "active"),
        ("user_ben", "active"),
        ("user_cy", "active"),
        ("user_dee", "left"),
    ]
