"""Deliverability from outside, over real HTTP (issue 39 item 4): the admin, chat and
campaign-resume functions as functions-framework processes on the embedded PostgreSQL.

/overview's alerts list what the circuit breaker paused, to its own org only; resuming it is
an org admin's act, audited, on the admin API or /overview's button, refused for a member who
is not an admin and for a second tenant, whichever org's path it names. The postal address
every footer prints is an admin's to set, checked, and another org's admin can neither read
nor set it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.store import Database, fetch_all, fetch_value
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("fn:admin", "fn:chat", "CONST-005")

ALPHA, BETA = "org_alpha_deliver", "org_beta_deliver"
DOMAIN = "alpha-mail.example"


@dataclass
class Api:
    admin: str
    chat: str
    http: httpx.Client
    data_dir: Path
    db: Database
    campaign: str

    def headers(self, org: str, *, admin: bool) -> dict[str, str]:
        token = mint_local_token(
            self.data_dir, org, f"user_{org}", org_claim="v2" if admin else "v1"
        )
        return {"Authorization": f"Bearer {token}"}

    def call(self, method: str, url: str, org: str, *, admin: bool = True, **kw: Any) -> Any:
        return self.http.request(method, url, headers=self.headers(org, admin=admin), **kw)

    def resume(self, path_org: str, as_org: str, body: dict[str, str], **kw: Any) -> Any:
        url = f"{self.admin}/orgs/{path_org}/sending/resume"
        return self.call("POST", url, as_org, json=body, **kw)

    def audit(self, org: str) -> list[dict[str, Any]]:
        with self.db.transaction(org) as cur:
            return fetch_all(
                cur,
                "SELECT actor, channel, detail FROM audit_log WHERE action = 'sending_resumed'"
                " ORDER BY id",
            )


@pytest.fixture
def api(testdb: PgDB, tmp_path: Path) -> Iterator[Api]:
    db = testdb.app()
    for org in (ALPHA, BETA):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    with db.transaction(ALPHA) as cur:  # what the breaker paused in ALPHA
        campaign = fetch_value(
            cur,
            "INSERT INTO campaigns (org_id, name, angle, tier, status, paused_at, pause_reason)"
            " VALUES (%s, 'Spring', 'Signal', 'T1', 'paused', now(),"
            " 'circuit breaker: bounce 20.0%%, complaints 0.00%%') RETURNING id",
            (ALPHA,),
        )
        cur.execute(
            "INSERT INTO sender_pauses (org_id, scope, sender, status, reason, judged,"
            " bounce_rate, complaint_rate, paused_at) VALUES (%s, 'domain', %s, 'paused',"
            " 'bounce 9.0%%', 100, 0.09, 0, now())",
            (ALPHA, DOMAIN),
        )
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_EMBEDDING_DIM": str(testdb.dim),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
    }
    names = ("admin", "chat", "campaign-resume")
    with (
        FunctionServers(env, names, log_dir=tmp_path / "logs") as servers,
        httpx.Client(timeout=30) as http,
    ):
        urls = servers.urls
        yield Api(urls["admin"], urls["chat"], http, tmp_path, db, str(campaign))


def test_only_the_orgs_admin_resumes_what_the_breaker_paused(api: Api) -> None:
    alerts = api.call("GET", f"{api.chat}/alerts", ALPHA, admin=False)
    assert alerts.status_code == 200, alerts.text
    shown = {a["kind"]: a["resume"] for a in alerts.json()["alerts"]}
    assert shown == {
        "campaign_paused": {"kind": "campaign", "target": api.campaign},
        "domain_paused": {"kind": "domain", "target": DOMAIN},
    }
    assert api.call("GET", f"{api.chat}/alerts", BETA).json() == {"alerts": []}  # ALPHA's only

    campaign = {"kind": "campaign", "target": api.campaign}
    domain = {"kind": "domain", "target": DOMAIN}
    # a member who is not an admin, on either surface
    button = f"{api.chat}/alerts/resume"
    assert api.call("POST", button, ALPHA, admin=False, json=domain).status_code == 403
    assert api.resume(ALPHA, ALPHA, domain, admin=False).status_code == 403
    # a second tenant's admin: ALPHA's path with BETA's token, or BETA's own path and button
    assert api.resume(ALPHA, BETA, campaign).status_code == 403
    missing = api.resume(BETA, BETA, campaign)
    assert missing.status_code == 404, missing.text  # not in BETA: as if it did not exist
    not_paused = api.resume(BETA, BETA, domain)
    assert not_paused.status_code == 409 and not_paused.json()["error"]["code"] == "not_paused"
    assert api.call("POST", button, BETA, json=campaign).status_code == 404
    assert api.audit(ALPHA) == [] and api.audit(BETA) == []
    # bad input: a clear 4xx, never a 5xx
    assert api.resume(ALPHA, ALPHA, {"kind": "region", "target": "x"}).status_code == 422
    assert api.resume(ALPHA, ALPHA, {**domain, "extra": "1"}).status_code == 422
    assert api.call("POST", button, ALPHA, content=b"not json").status_code == 415
    broken = {**api.headers(ALPHA, admin=True), "Content-Type": "application/json"}
    assert api.http.post(button, headers=broken, content=b"{").status_code == 400
    assert api.call("GET", button, ALPHA).status_code == 405

    # ALPHA's admin: the button resumes the domain, the admin API the campaign
    by_button = api.call("POST", button, ALPHA, json=domain)
    assert by_button.status_code == 200, by_button.text
    assert by_button.json()["resumed_by"] == f"user_{ALPHA}"
    by_api = api.resume(ALPHA, ALPHA, campaign)
    assert by_api.status_code == 200 and by_api.json()["status"] == "resumed"
    assert [(e["actor"], e["channel"], e["detail"]["kind"]) for e in api.audit(ALPHA)] == [
        (f"user_{ALPHA}", "ui", "domain"),
        (f"user_{ALPHA}", "admin", "campaign"),
    ]
    assert api.resume(ALPHA, ALPHA, domain).status_code == 409  # resumed already
    with api.db.transaction(ALPHA) as cur:
        assert fetch_value(cur, "SELECT resumed_by FROM sender_pauses") == f"user_{ALPHA}"
        assert fetch_value(cur, "SELECT resumed_by FROM campaigns") == f"user_{ALPHA}"


def test_the_postal_address_is_the_orgs_admins_to_set_and_is_checked(api: Api) -> None:
    path = f"{api.admin}/orgs/{ALPHA}/postal-address"
    assert api.call("GET", path, ALPHA).json() == {"postal_address": None}
    bad = api.call("PUT", path, ALPHA, json={"postal_address": "somewhere"})
    assert bad.status_code == 422 and "postal_address" in bad.json()["error"]["message"]
    assert api.call("PUT", path, ALPHA, json={"address": "x"}).status_code == 422
    good = {"postal_address": "Alpha Ltd\n1 Quay Street\nBristol BS1 4XX"}
    assert api.call("PUT", path, ALPHA, admin=False, json=good).status_code == 403
    assert api.call("PUT", path, BETA, json=good).status_code == 403  # another org's admin
    assert api.call("GET", path, BETA).status_code == 403
    done = api.call("PUT", path, ALPHA, json=good)
    assert done.status_code == 200, done.text
    assert done.json() == {"postal_address": "Alpha Ltd, 1 Quay Street, Bristol BS1 4XX"}
    assert api.call("GET", path, ALPHA).json() == done.json()
    beta = api.call("GET", f"{api.admin}/orgs/{BETA}/postal-address", BETA)
    assert beta.json() == {"postal_address": None}  # ALPHA's address is not BETA's
