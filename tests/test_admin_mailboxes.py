"""Sender mailboxes from outside, over real HTTP (issue 39 item 2): the admin function as a
functions-framework process, the DNS stand-in on the wire, the Gmail stand-in for the OAuth
grant. An admin verifies a domain, adds a Gmail mailbox on it, connects it through Google's
consent and the callback; a second tenant can neither add a mailbox on that domain, nor see,
change or connect the first tenant's mailbox, nor spend its OAuth state; bad bodies are
422s naming the field; a mailbox is given only to an active person of its own org (issue 35);
the CLI lists, pauses and gives mailboxes through the same flows."""

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
from colony.testing.gmail_server import GmailServer
from colony.testing.mail_accounts import redirect_code
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("fn:admin")

ALPHA, BETA = "org_alpha_mb", "org_beta_mb"
DOMAIN = "alpha-mail.example"
ADA = f"ada@{DOMAIN}"


@dataclass
class Api:
    admin: str
    http: httpx.Client
    data_dir: Path
    dns: DnsServer
    gmail: GmailServer
    db: PgDB

    def call(
        self, method: str, org: str, path: str = "", as_org: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        claim = "v2" if kwargs.pop("admin", True) else "v1"
        token = mint_local_token(self.data_dir, as_org or org, org_claim=claim)
        url = f"{self.admin}/orgs/{org}/mailboxes{path}"
        return self.http.request(
            method, url, headers={"Authorization": f"Bearer {token}"}, **kwargs
        )


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
    with DnsServer() as dns, GmailServer() as gmail:
        env = {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_EMBEDDING_DIM": str(testdb.dim),
            "COLONY_TRANSPORT": "local",
            "COLONY_DATA_DIR": str(tmp_path),
            "COLONY_DNS_RESOLVER": dns.address,
            "COLONY_SPF_INCLUDE": "_spf.relay.test",
            "COLONY_MAILBOX_REDIRECT_URI": "https://colony.example/mailboxes/callback",
            **gmail.env(),
        }
        for name, value in env.items():  # the CLI below reads the same settings
            monkeypatch.setenv(name, value)
        with (
            FunctionServers(env, ("admin",), log_dir=tmp_path / "logs") as servers,
            httpx.Client(timeout=30) as http,
        ):
            api = Api(servers.urls["admin"], http, tmp_path, dns, gmail, testdb)
            domains = f"{api.admin}/orgs/{ALPHA}/sending-domains"
            token = mint_local_token(tmp_path, ALPHA, org_claim="v2")
            headers = {"Authorization": f"Bearer {token}"}
            refused = http.post(domains, json={"domain": DOMAIN}, headers=headers)
            publish(dns, refused.json()["error"]["domain"]["publish"])
            assert http.post(domains, json={"domain": DOMAIN}, headers=headers).status_code == 201
            gmail.accounts.host(ADA)
            yield api


def test_a_mailbox_is_added_connected_and_kept_from_a_second_tenant(api: Api) -> None:
    body = {"address": ADA, "display_name": "Ada Lovelace", "daily_limit": 30, "kind": "gmail"}
    added = api.call("POST", ALPHA, json=body)
    assert added.status_code == 201, added.text
    mailbox = added.json()["id"]
    assert added.json()["waits_because"] == "its mailbox is not connected yet: connect it"
    listed = api.call("GET", ALPHA).json()["mailboxes"]
    assert [(m["address"], m["limit_today"], m["grant"]["status"]) for m in listed] == [
        (ADA, 30, "none")
    ]

    # the second tenant: not on its domains, shown nothing, and the first's mailbox is
    # neither reachable through the first's path nor through its own
    theirs = api.call("POST", BETA, json={**body, "address": f"mal@{DOMAIN}"})
    assert theirs.status_code == 422 and "not one of this organisation" in theirs.text
    assert api.call("GET", BETA).json() == {"mailboxes": []}
    assert api.call("GET", ALPHA, f"/{mailbox}", as_org=BETA).status_code == 403
    assert api.call("GET", BETA, f"/{mailbox}").status_code == 404
    patched = api.call("PUT", BETA, f"/{mailbox}", json={"status": "paused"})
    assert patched.status_code == 404
    assert api.call("POST", BETA, f"/{mailbox}/connect").status_code == 404
    assert api.call("GET", ALPHA, admin=False).status_code == 403  # a member, not an admin
    changed = api.call("PUT", ALPHA, f"/{mailbox}", json={"daily_limit": 40})
    assert changed.status_code == 200 and changed.json()["limit_today"] == 40
    ramp = {"warmup_days": 14}  # a ramp with no start day cannot work
    assert api.call("PUT", ALPHA, f"/{mailbox}", json=ramp).status_code == 422

    started = api.call("POST", ALPHA, f"/{mailbox}/connect")
    assert started.status_code == 201, started.text
    url = started.json()["authorize_url"]
    assert url.startswith(api.gmail.base_url) and "login_hint=ada%40alpha-mail.example" in url
    consent = api.http.get(url, follow_redirects=False)
    code, state = redirect_code(consent.headers["location"])
    callback = {"code": code, "state": state}
    stolen = api.call("POST", BETA, f"/{mailbox}/callback", json=callback)
    assert stolen.status_code == 404  # BETA cannot name the mailbox; the state stays unspent
    own = api.db.owner_rows("SELECT 1 FROM mailbox_oauth_states")
    assert len(own) == 1
    done = api.call("POST", ALPHA, f"/{mailbox}/callback", json=callback)
    assert done.status_code == 200, done.text
    assert done.json()["grant"] == "connected"
    again = api.call("POST", ALPHA, f"/{mailbox}/callback", json=callback)
    assert again.status_code == 403  # spent
    shown = api.call("GET", ALPHA, f"/{mailbox}").json()
    assert shown["sending"] is True and shown["grant"]["status"] == "connected"
    assert code not in json.dumps(shown) and "colony-mailbox-" not in json.dumps(shown)
    rows = api.db.owner_rows("SELECT org_id, address, grant_status FROM sender_mailboxes")
    assert rows == [{"org_id": ALPHA, "address": ADA, "grant_status": "connected"}]


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"address": "not an address", "display_name": "A", "daily_limit": 5}, "address"),
        ({"address": ADA, "display_name": "A", "daily_limit": 0}, "daily_limit"),
        ({"address": ADA, "display_name": "A\r\nBcc: x@y", "daily_limit": 5}, "display_name"),
        ({"address": ADA, "display_name": "A", "daily_limit": 5, "warmup_days": 9}, "warmup"),
        ({"address": ADA, "display_name": "A", "daily_limit": 5, "kind": "imap"}, "kind"),
        ({"address": ADA, "display_name": "A", "daily_limit": 5, "owner": "x"}, "owner"),
    ],
)
def test_a_body_that_cannot_make_a_mailbox_is_a_422_naming_it(
    api: Api, body: dict[str, Any], names: str
) -> None:
    answer = api.call("POST", ALPHA, json=body)
    assert answer.status_code == 422, answer.text
    assert names in answer.json()["error"]["message"]
    assert api.db.owner_rows("SELECT 1 FROM sender_mailboxes") == []


def test_the_cli_lists_adds_and_pauses_mailboxes(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["org", "mailboxes", ALPHA, "--add", ADA, "--name", "Ada", "--limit", "12"]) == 0
    mailbox = json.loads(capsys.readouterr().out)["id"]
    assert main(["org", "mailboxes", ALPHA, "--set", mailbox, "--pause"]) == 0
    assert json.loads(capsys.readouterr().out)["waits_because"] == "paused by an admin"
    assert (
        main(["org", "mailboxes", BETA, "--add", f"m@{DOMAIN}", "--name", "M", "--limit", "1"]) == 2
    )
    assert "not one of this organisation" in capsys.readouterr().err
    assert main(["org", "mailboxes", ALPHA]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["mailboxes"]
    assert (listed["address"], listed["status"], listed["daily_limit"]) == (ADA, "paused", 12)


def test_a_mailbox_is_given_only_to_an_active_person_of_its_org(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    def seed(conn: Any) -> None:
        conn.cursor().execute(
            "INSERT INTO org_members (org_id, user_id, role, status, left_at) VALUES"
            " (%s, 'user_ada', 'org:admin', 'active', NULL),"
            " (%s, 'user_gone', 'org:member', 'left', now()),"
            " (%s, 'user_mal', 'org:admin', 'active', NULL)",
            (ALPHA, ALPHA, BETA),
        )
        conn.commit()

    api.db.as_owner(seed)
    body = {"address": ADA, "display_name": "Ada", "daily_limit": 30}
    for who, why in (
        ("user_nobody", "is not a person of"),
        ("user_gone", "has left"),
        ("user_mal", "is not a person of"),  # the second tenant's person
    ):
        refused = api.call("POST", ALPHA, json=body | {"user_id": who})
        assert refused.status_code == 422, refused.text
        assert f"user_id: '{who}' {why}" in refused.json()["error"]["message"]
    # the second tenant cannot give a mailbox to the first's person, nor touch its mailbox
    theirs = api.call("POST", BETA, json=body | {"address": f"m@{DOMAIN}", "user_id": "user_ada"})
    assert theirs.status_code == 422 and "user_id: 'user_ada'" in theirs.text
    added = api.call("POST", ALPHA, json=body | {"user_id": "user_ada"})
    assert added.status_code == 201 and added.json()["user_id"] == "user_ada"
    mailbox = added.json()["id"]
    stolen = api.call("PUT", BETA, f"/{mailbox}", json={"user_id": "user_mal"})
    assert stolen.status_code == 404
    stolen = api.call("PUT", ALPHA, f"/{mailbox}", json={"user_id": "user_mal"}, as_org=BETA)
    assert stolen.status_code == 403
    assert api.call("PUT", ALPHA, f"/{mailbox}", json={"user_id": ""}).status_code == 422
    rows = api.db.owner_rows("SELECT org_id, user_id FROM sender_mailboxes")
    assert rows == [{"org_id": ALPHA, "user_id": "user_ada"}]

    # the CLI, through the same flow
    assert main(["org", "mailboxes", ALPHA, "--set", mailbox, "--owner", "user_gone"]) == 2
    assert "user_id: 'user_gone' has left this organisation" in capsys.readouterr().err
    assert main(["org", "mailboxes", ALPHA, "--set", mailbox, "--no-owner"]) == 0
    assert json.loads(capsys.readouterr().out)["user_id"] is None
    assert api.call("GET", ALPHA, f"/{mailbox}").json()["user_id"] is None
