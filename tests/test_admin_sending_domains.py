"""Sending domains from outside, over real HTTP: the admin and chat functions as
functions-framework processes, asking the DNS stand-in on the wire (``COLONY_DNS_RESOLVER``),
keys in the local secret store. An admin adds a domain and is told what to publish, publishes
it and adds it again; a second tenant can neither add that domain nor set a From address on
it, nor see it; when the domain breaks, the daily check (run here by the CLI) pauses it and
/overview's alerts say so, to that org only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from colony.local.cli import main
from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.testing.dns_server import DnsServer, publish
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("fn:admin", "fn:chat")

ALPHA, BETA = "org_alpha_dom", "org_beta_dom"
DOMAIN = "alpha.example"
PATH = "/orgs/{org}/sending-domains"


@dataclass
class Api:
    admin: str
    chat: str
    http: httpx.Client
    data_dir: Path
    dns: DnsServer
    db: PgDB

    def bearer(self, org: str, *, admin: bool = True) -> dict[str, str]:
        token = mint_local_token(self.data_dir, org, org_claim="v2" if admin else "v1")
        return {"Authorization": f"Bearer {token}"}

    def call(
        self, method: str, org: str, as_org: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = self.bearer(as_org or org, admin=kwargs.pop("admin", True))
        url = f"{self.admin}{PATH.format(org=org)}"
        return self.http.request(method, url, headers=headers, **kwargs)


@pytest.fixture
def api(testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    testdb.as_owner(
        lambda conn: (
            conn.cursor().execute(
                "INSERT INTO organizations (id, name) VALUES (%s, 'A'), (%s, 'B')", (ALPHA, BETA)
            ),
            conn.commit(),
        )
    )
    with DnsServer() as dns:
        env = {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_EMBEDDING_DIM": str(testdb.dim),
            "COLONY_TRANSPORT": "local",
            "COLONY_DATA_DIR": str(tmp_path),
            "COLONY_DNS_RESOLVER": dns.address,
            "COLONY_SPF_INCLUDE": "_spf.relay.test",
        }
        for name, value in env.items():  # the CLI below reads the same settings
            monkeypatch.setenv(name, value)
        with (
            FunctionServers(env, ("admin", "chat"), log_dir=tmp_path / "logs") as servers,
            httpx.Client(timeout=30) as http,
        ):
            yield Api(servers.urls["admin"], servers.urls["chat"], http, tmp_path, dns, testdb)


def test_a_domain_is_proven_by_its_dns_and_then_only_its_org_can_use_it(api: Api) -> None:
    refused = api.call("POST", ALPHA, json={"domain": DOMAIN})
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == "domain_unverified" and DOMAIN in error["message"]
    records = error["domain"]["publish"]
    assert [(r["record"], r["type"]) for r in records] == [
        ("spf", "TXT"),
        ("dkim", "TXT"),
        ("dmarc", "TXT"),
    ]
    assert all(r["zone"].startswith(f"{r['name']}. 3600 IN TXT ") for r in records)
    listed = api.call("GET", ALPHA).json()["domains"]
    assert [(d["domain"], d["status"]) for d in listed] == [(DOMAIN, "pending")]

    publish(api.dns, records)
    added = api.call("POST", ALPHA, json={"domain": DOMAIN.upper() + "."})
    assert added.status_code == 201, added.text
    assert added.json()["domain"] == DOMAIN and added.json()["status"] == "verified"

    # the second tenant: refused, told nothing of whose it is, and shown nothing
    taken = api.call("POST", BETA, json={"domain": DOMAIN})
    assert taken.status_code == 403, taken.text
    assert taken.json()["error"]["code"] == "owned_by_another_org"
    assert ALPHA not in taken.text
    assert api.call("GET", BETA).json() == {"domains": []}
    settings = {
        "competitors": [],
        "sending": {"daily_cap": 10, "per_domain_hourly": 2, "mail_from": f"M <m@{DOMAIN}>"},
    }
    put = api.http.put(f"{api.admin}/orgs/{BETA}/settings", json=settings, headers=api.bearer(BETA))
    assert put.status_code == 422 and "sending domains" in put.json()["error"]["message"]
    # nor through the first tenant's path, with its own token or a member's
    assert api.call("GET", ALPHA, as_org=BETA).status_code == 403
    assert api.call("POST", ALPHA, json={"domain": DOMAIN}, admin=False).status_code == 403
    rows = api.db.owner_rows("SELECT org_id, domain, status FROM sending_domains ORDER BY 1")
    assert rows == [{"org_id": ALPHA, "domain": DOMAIN, "status": "verified"}]
    # the first tenant sets its From address on it
    own = api.http.put(
        f"{api.admin}/orgs/{ALPHA}/settings",
        json={**settings, "sending": {**settings["sending"], "mail_from": f"Ada <ada@{DOMAIN}>"}},
        headers=api.bearer(ALPHA),
    )
    assert own.status_code == 200, own.text


@pytest.mark.parametrize(
    "body", [{"domain": "not a domain"}, {"domain": "ada@alpha.example"}, {"domain": ""}, {}]
)
def test_a_body_that_names_no_domain_is_a_422(api: Api, body: dict[str, Any]) -> None:
    answer = api.call("POST", ALPHA, json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "unprocessable"
    assert api.dns.queries == []


def test_a_domain_that_breaks_raises_an_alert_on_the_overview_of_its_org_only(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    alerts = f"{api.chat}/alerts"
    publish(
        api.dns,
        api.call("POST", ALPHA, json={"domain": DOMAIN}).json()["error"]["domain"]["publish"],
    )
    assert api.call("POST", ALPHA, json={"domain": DOMAIN}).status_code == 201
    assert api.http.get(alerts, headers=api.bearer(ALPHA)).json() == {"alerts": []}

    api.dns.remove(f"_dmarc.{DOMAIN}")
    assert main(["org", "domains", ALPHA, "--check"]) == 0  # the daily check's work, now
    assert json.loads(capsys.readouterr().out)["paused"] == [DOMAIN]
    shown = api.http.get(alerts, headers=api.bearer(ALPHA)).json()["alerts"]
    assert [(a["domain"], a["status"]) for a in shown] == [(DOMAIN, "paused")]
    assert [p["code"] for p in shown[0]["problems"]] == ["dmarc_missing"]
    assert "paused" in shown[0]["message"]
    assert api.http.get(alerts, headers=api.bearer(BETA)).json() == {"alerts": []}
    # the CLI's add shows what to publish, as the API does, and exits 2
    assert main(["org", "domains", ALPHA, "--add", DOMAIN]) == 2
    said = capsys.readouterr().err
    assert "no DMARC record" in said and f"_dmarc.{DOMAIN}. 3600 IN TXT" in said
