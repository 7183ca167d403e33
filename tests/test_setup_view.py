"""/overview's Setup routes (issue 34 item 4) over real HTTP: the chat function served by
functions-framework, the embedded PostgreSQL, local bearer tokens for two tenants.

An org's admin reads and replaces its ICP (anti-ICP rules included), its sequence library and
its settings through the admin API's own contracts and flows, each change on the audit log as
theirs; a member without the admin role, and another org's admin, are refused with a 403 that
is recorded and changes nothing; a bad body or an impossible rule is a 422 naming each field
at fault (SPEC §10's shape, with ``error.fields``), never quoting a value it was not given.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from colony.local.demo import DEMO_DIR
from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.store import Database, fetch_all
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("fn:chat", "ENT-010", "ENT-004")

ORG, OTHER = "org_setup", "org_setup_other"
ICP = json.loads((DEMO_DIR / "icp.json").read_text(encoding="utf-8"))
SEQUENCES = {
    "sequences": [
        {
            "name": "Signal T1",
            "angle": "Signal",
            "tier": "T1",
            "steps": [
                {"channel": "email", "delay_days": 0, "guidance": "Open on their expansion."},
                {"channel": "call", "delay_days": 3, "guidance": "Call about the new sites."},
            ],
        }
    ]
}
SETTINGS = {
    "competitors": ["FacilityIQ"],
    "sending": {"daily_cap": 150, "per_domain_hourly": 4, "sequence_approval": "once"},
    "research": {"enabled": False},
    "budget": {"monthly_usd": 250.0, "alert_share": 0.75, "hard_cap": True},
}


@dataclass
class Api:
    base: str
    http: httpx.Client
    tokens: dict[str, str]
    db: Database
    owner: PgDB

    def call(self, method: str, path: str, who: str = "admin", **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return self.http.request(method, f"{self.base}{path}", headers=headers, **kwargs)

    def audit(self) -> list[dict[str, Any]]:
        with self.db.transaction(ORG) as cur:
            return fetch_all(
                cur,
                "SELECT actor, channel, action, detail FROM audit_log"
                " WHERE action LIKE '%%.replace' ORDER BY id",
            )

    def rejections(self) -> list[dict[str, Any]]:
        conn = self.owner.owner_connection()
        try:
            return fetch_all(
                conn.cursor(),
                "SELECT function, claimed_org_id, reason FROM rejected_deliveries"
                " WHERE function = 'chat' ORDER BY id",
            )
        finally:
            conn.close()


@pytest.fixture
def api(testdb: PgDB, tmp_path: Path) -> Iterator[Api]:
    db = testdb.app()
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
    }
    tokens = {
        "admin": mint_local_token(tmp_path, ORG, user_id="user_ada", org_claim="v2"),
        "member": mint_local_token(tmp_path, ORG, user_id="user_mo"),  # v1: no role
        "other": mint_local_token(tmp_path, OTHER, user_id="user_eve", org_claim="v2"),
    }
    with (
        FunctionServers(env, ["chat"], log_dir=tmp_path) as servers,
        httpx.Client(timeout=30) as http,
    ):
        yield Api(servers.urls["chat"], http, tokens, db, testdb)


def test_an_admin_edits_the_icp_the_sequences_and_the_settings(api: Api) -> None:
    assert api.call("GET", "/setup").json() == {"org_id": ORG, "admin": True}
    assert api.call("GET", "/setup", "member").json() == {"org_id": ORG, "admin": False}
    assert api.call("GET", f"/setup/{ORG}/icp").json() == {"version": None, "icp": None}

    put = api.call("PUT", f"/setup/{ORG}/icp", json=ICP)
    assert put.status_code == 200, put.text
    assert put.json()["version"] == 1
    read = api.call("GET", f"/setup/{ORG}/icp").json()
    assert read["version"] == 1
    assert read["icp"]["anti_icp_rules"] == ICP["anti_icp_rules"]
    assert read["icp"]["rubric"]["size"]["bands"] == ICP["rubric"]["size"]["bands"]  # kept

    put = api.call("PUT", f"/setup/{ORG}/sequences", json=SEQUENCES)
    assert put.status_code == 200, put.text
    assert api.call("GET", f"/setup/{ORG}/sequences").json() == SEQUENCES

    put = api.call("PUT", f"/setup/{ORG}/settings", json=SETTINGS)
    assert put.status_code == 200, put.text
    assert put.json()["sending"] == SETTINGS["sending"]
    assert api.call("GET", f"/setup/{ORG}/settings").json() == put.json()

    entries = api.audit()
    assert [(e["actor"], e["channel"], e["action"]) for e in entries] == [
        ("user_ada", "ui", "icp.replace"),
        ("user_ada", "ui", "sequences.replace"),
        ("user_ada", "ui", "settings.replace"),
    ]
    assert entries[0]["detail"] == {"version": 1, "anti_icp_rules": len(ICP["anti_icp_rules"])}
    assert entries[1]["detail"] == {"sequences": 1, "steps": 2}
    assert api.rejections() == []


def test_a_member_and_another_orgs_admin_are_refused_and_recorded(api: Api) -> None:
    assert api.call("PUT", f"/setup/{ORG}/icp", json=ICP).status_code == 200
    for who, why in (
        ("member", "forbidden: not an org admin"),
        ("other", "forbidden: the token is for another org"),
    ):
        for method, what in (("GET", "icp"), ("PUT", "icp"), ("PUT", "settings")):
            body = SETTINGS if what == "settings" else ICP
            answer = api.call(method, f"/setup/{ORG}/{what}", who, json=body)
            assert answer.status_code == 403, (who, method, what, answer.text)
            assert answer.json()["error"]["code"] == "org_scope"
            assert api.rejections()[-1] == {
                "function": "chat",
                "claimed_org_id": ORG,
                "reason": why,
            }
    assert len(api.rejections()) == 6
    for header in ({}, {"Authorization": "Bearer not-a-token"}):
        answer = api.http.put(f"{api.base}/setup/{ORG}/icp", json=ICP, headers=header)
        assert answer.status_code == 401, answer.text
        assert api.rejections()[-1]["reason"].startswith("unauthorized: ")
    assert len(api.rejections()) == 8
    assert [e["action"] for e in api.audit()] == ["icp.replace"]  # nothing else changed
    assert api.call("GET", f"/setup/{ORG}/icp").json()["version"] == 1
    with api.db.transaction(OTHER) as cur:
        assert fetch_all(cur, "SELECT version FROM icp_definitions") == []
    # Another org's admin has its own org's setup, and only that.
    assert api.call("GET", f"/setup/{OTHER}/icp", "other").json() == {"version": None, "icp": None}


def test_each_fault_names_its_field(api: Api) -> None:
    bad_rule = json.loads(json.dumps(ICP))
    bad_rule["anti_icp_rules"][1]["op"] = "lt"
    bad_rule["anti_icp_rules"][1]["value"] = "many"
    answer = api.call("PUT", f"/setup/{ORG}/icp", json=bad_rule)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "unprocessable"
    rule = ICP["anti_icp_rules"][1]["id"]
    assert error["fields"] == [
        {
            "field": "anti_icp_rules.1.value",
            "message": f"anti-ICP rule {rule!r} (op 'lt') needs a numeric value, got 'many'",
        }
    ]

    broken = json.loads(json.dumps(ICP))
    broken["tiers"][4]["min_score"] = 5
    broken["anti_icp_rules"][0]["reason"] = ""
    broken["surprise"] = True
    fields = api.call("PUT", f"/setup/{ORG}/icp", json=broken).json()["error"]["fields"]
    by_field = {f["field"]: f["message"] for f in fields}
    assert set(by_field) == {"anti_icp_rules.0.reason", "surprise"}, fields
    broken.pop("surprise")
    broken["anti_icp_rules"][0]["reason"] = "Too small."
    fields = api.call("PUT", f"/setup/{ORG}/icp", json=broken).json()["error"]["fields"]
    assert fields == [{"field": "tiers", "message": "the last tier (T5) must start at 0"}]

    steps = json.loads(json.dumps(SEQUENCES))
    steps["sequences"][0]["steps"][1]["delay_days"] = -1
    steps["sequences"][0]["steps"][0]["channel"] = "fax"
    fields = api.call("PUT", f"/setup/{ORG}/sequences", json=steps).json()["error"]["fields"]
    assert {f["field"] for f in fields} == {
        "sequences.0.steps.0.channel",
        "sequences.0.steps.1.delay_days",
    }

    limits = json.loads(json.dumps(SETTINGS))
    limits["sending"]["per_domain_hourly"] = 500
    fields = api.call("PUT", f"/setup/{ORG}/settings", json=limits).json()["error"]["fields"]
    assert fields == [{"field": "sending.per_domain_hourly", "message": "cannot exceed daily_cap"}]
    limits = json.loads(json.dumps(SETTINGS))
    limits["sending"]["mail_from"] = "Ada <ada@elsewhere.example>"
    fields = api.call("PUT", f"/setup/{ORG}/settings", json=limits).json()["error"]["fields"]
    assert [f["field"] for f in fields] == ["sending.mail_from"]
    assert (
        "elsewhere.example is not one of this organisation's sending domains"
        in (fields[0]["message"])
    )
    assert api.audit() == []  # nothing was replaced
    assert api.call("PUT", f"/setup/{ORG}/icp", content=b"").status_code == 400
    assert api.call("DELETE", f"/setup/{ORG}/icp").status_code == 405
    assert api.call("GET", f"/setup/{ORG}/retention").status_code == 404
