"""Connecting HubSpot per org (issue 36 item 1), from outside: the admin function loaded from
its real ``main.py``, the real PostgreSQL, the HubSpot stand-in over HTTP (its authorize page,
token endpoint and CRM API), tokens in the local secret store.

Two tenants: ``org_alpha`` (HubSpot portal 101) and ``org_beta`` (portal 202). Beta's admin
cannot complete alpha's sign-in (the state is alpha's and alpha's person's), cannot read or
disconnect alpha's connection, and cannot take alpha's portal. A token HubSpot no longer
honours pauses the connection with its reason, and nothing is deleted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from colony.adapters.hubspot import hubspot_for_token
from colony.adapters.hubspot_oauth import hubspot_oauth
from colony.errors import ConnectionPaused, NotFound
from colony.flows.crm import connections
from colony.flows.tenants import erasure
from colony.local.tokens import ensure_local_keys
from colony.runtime.deps import Deps, set_deps_for_tests
from colony.runtime.notion_clients import secret_store
from colony.store.crm.writes import DbLedger
from colony.testing.fakes import MemoryBlobStore
from colony.testing.hubspot_seed import seeded_world
from colony.testing.hubspot_server import HubSpotServer
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import org_settings, registered_app
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("fn:admin")

ALPHA, BETA = "org_alpha", "org_beta"
REDIRECT = "https://colony.example/overview/crm/hubspot/callback"


class Clock:
    """The flows' clock, moved on by the test."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class World:
    db: PgDB
    data_dir: Path
    hubspot: HubSpotServer
    api: Any
    deps: Deps
    clock: Clock

    def token(self, org: str, user: str = "user_1", role: str | None = "org:admin") -> str:
        keys = ensure_local_keys(self.data_dir)
        now = datetime.now(UTC)
        claims: dict[str, Any] = {"sub": user, "org_id": org, "iat": now}
        claims["exp"] = now + timedelta(hours=1)
        if role is not None:
            claims["org_role"] = role
        return jwt.encode(claims, keys.private_path.read_bytes(), algorithm="RS256")

    def call(self, method: str, path: str, token: str | None, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.api.open(path, method=method, json=body, headers=headers)

    def begin(self, org: str, user: str = "user_1") -> str:
        """Connect as ``user`` of ``org``: the authorize URL the API answers."""
        answer = self.call("POST", f"/orgs/{org}/crm/hubspot/connect", self.token(org, user))
        assert answer.status_code == 201, answer.get_json()
        return str(answer.get_json()["authorize_url"])

    def allow(self, authorize_url: str, portal: str) -> dict[str, str]:
        """The person, signed in to HubSpot on ``portal``, allows the app: where HubSpot
        sends their browser back, as ``code`` and ``state``."""
        self.hubspot.consent_as(portal)
        answer = httpx.get(authorize_url, follow_redirects=False)
        assert answer.status_code == 302, answer.text
        location = urlsplit(answer.headers["location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
        query = parse_qs(location.query)
        return {"code": query["code"][0], "state": query["state"][0]}

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return self.db.owner_rows(sql)

    def audit(self, org: str) -> list[tuple[str, str, str | None]]:
        rows = self.rows(
            f"SELECT event, action, reason FROM audit_log WHERE org_id = '{org}' ORDER BY id"
        )
        return [(r["event"], r["action"], r["reason"]) for r in rows]

    def secrets(self) -> list[str]:
        return sorted(p.name for p in (self.data_dir / "secrets").glob("*"))


def hubspot_env(hubspot: HubSpotServer) -> dict[str, str]:
    """The HubSpot settings of a deployment whose HubSpot is the stand-in."""
    return {
        "COLONY_HUBSPOT_BASE_URL": hubspot.url,
        "COLONY_HUBSPOT_AUTH_URL": hubspot.authorize_url,
        "COLONY_HUBSPOT_CLIENT_ID": hubspot.accounts.client_id,
        "COLONY_HUBSPOT_CLIENT_SECRET": hubspot.accounts.client_secret,
        "COLONY_HUBSPOT_REDIRECT_URI": REDIRECT,
    }


@pytest.fixture
def world(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[World]:
    portals = (seeded_world(1, portal_id="101"), seeded_world(2, portal_id="202"))
    with HubSpotServer(*portals) as hubspot:
        settings = org_settings(testdb, tmp_path, ALPHA, BETA, **hubspot_env(hubspot))
        clock = Clock()
        deps = local_deps(settings, testdb.app(), InlineTransport(), clock=clock)
        set_deps_for_tests(deps)
        api = registered_app("admin", monkeypatch)
        yield World(testdb, tmp_path, hubspot, api, deps, clock)
        set_deps_for_tests(None)


def connect(world: World, org: str, portal: str) -> Any:
    back = world.allow(world.begin(org), portal)
    return world.call("POST", f"/orgs/{org}/crm/hubspot/callback", world.token(org), back)


def test_an_admin_connects_hubspot_through_oauth(world: World) -> None:
    url = world.begin(ALPHA)
    query = parse_qs(urlsplit(url).query)
    assert query["redirect_uri"] == [REDIRECT] and query["client_id"] == ["colony-app"]
    assert "crm.objects.deals.write" in query["scope"][0].split()
    back = world.allow(url, "101")
    answer = world.call("POST", f"/orgs/{ALPHA}/crm/hubspot/callback", world.token(ALPHA), back)
    assert answer.status_code == 200, answer.get_json()
    body = answer.get_json()
    assert (body["status"], body["account_id"], body["connected_by"]) == (
        "connected",
        "101",
        "user_1",
    )
    assert "access_token" not in json.dumps(body) and back["code"] not in json.dumps(body)
    # the tokens are in the secret store under the row's secret name, and nowhere in the db
    (row,) = world.rows("SELECT secret_name, status FROM crm_connections")
    assert world.secrets() == [row["secret_name"]]
    stored = json.loads((world.data_dir / "secrets" / row["secret_name"]).read_text())
    assert set(stored) == {"access_token", "refresh_token", "expires_at"}
    assert world.rows("SELECT count(*) AS n FROM crm_oauth_states") == [{"n": 0}]  # spent
    assert world.audit(ALPHA) == [("effect", "crm.connect", None)]
    # the same state cannot be used twice
    again = world.call("POST", f"/orgs/{ALPHA}/crm/hubspot/callback", world.token(ALPHA), back)
    assert again.status_code == 403
    status = world.call("GET", f"/orgs/{ALPHA}/crm/hubspot", world.token(ALPHA)).get_json()
    assert status["status"] == "connected" and status["account_id"] == "101"


def test_another_org_cannot_complete_read_or_disconnect_alphas_connection(world: World) -> None:
    alphas = world.allow(world.begin(ALPHA), "101")
    world.begin(BETA)  # beta has a flow of its own in progress
    # beta's admin, on beta's own path, with alpha's state: not found under beta's RLS
    stolen = world.call("POST", f"/orgs/{BETA}/crm/hubspot/callback", world.token(BETA), alphas)
    assert stolen.status_code == 403 and stolen.get_json()["error"]["code"] == "forbidden"
    assert world.audit(BETA) == [("refusal", "crm.connect", "unknown_state")]
    # beta's admin on alpha's paths: refused before anything runs, recorded
    for method, what, body in (
        ("POST", "/callback", alphas),
        ("GET", "", None),
        ("POST", "/disconnect", {}),
        ("POST", "/connect", {}),
    ):
        answer = world.call(method, f"/orgs/{ALPHA}/crm/hubspot{what}", world.token(BETA), body)
        assert answer.status_code == 403, (method, what)
    rejected = world.rows("SELECT reason FROM rejected_deliveries WHERE function = 'admin'")
    assert len(rejected) == 4 and all("another org" in r["reason"] for r in rejected)
    assert world.rows("SELECT * FROM crm_connections") == []
    # alpha's state survived beta's attempt: alpha completes, beta still cannot see it
    done = world.call("POST", f"/orgs/{ALPHA}/crm/hubspot/callback", world.token(ALPHA), alphas)
    assert done.status_code == 200, done.get_json()
    theirs = world.call("GET", f"/orgs/{BETA}/crm/hubspot", world.token(BETA)).get_json()
    assert theirs == {"provider": "hubspot", "status": "not_connected"}
    off = world.call("POST", f"/orgs/{BETA}/crm/hubspot/disconnect", world.token(BETA), {})
    assert off.get_json()["stopped"] == []
    assert world.rows("SELECT org_id, status FROM crm_connections") == [
        {"org_id": ALPHA, "status": "connected"}
    ]


def test_a_member_or_another_person_cannot_use_an_admins_sign_in(world: World) -> None:
    member = world.call(
        "POST", f"/orgs/{ALPHA}/crm/hubspot/connect", world.token(ALPHA, role="org:member")
    )
    assert member.status_code == 403
    back = world.allow(world.begin(ALPHA, "user_1"), "101")
    other = world.call(
        "POST", f"/orgs/{ALPHA}/crm/hubspot/callback", world.token(ALPHA, "user_2"), back
    )
    assert other.status_code == 403
    assert world.audit(ALPHA) == [("refusal", "crm.connect", "another_person")]
    assert world.rows("SELECT * FROM crm_connections") == []


def test_an_expired_sign_in_is_refused(world: World) -> None:
    back = world.allow(world.begin(ALPHA), "101")
    world.clock.now += connections.STATE_TTL + timedelta(seconds=1)
    late = world.call("POST", f"/orgs/{ALPHA}/crm/hubspot/callback", world.token(ALPHA), back)
    assert late.status_code == 403
    assert world.audit(ALPHA) == [("refusal", "crm.connect", "expired_state")]


def test_a_code_hubspot_refuses_is_a_refusal_not_a_5xx(world: World) -> None:
    back = world.allow(world.begin(ALPHA), "101")
    forged = {**back, "code": "not-a-code"}
    answer = world.call("POST", f"/orgs/{ALPHA}/crm/hubspot/callback", world.token(ALPHA), forged)
    assert answer.status_code == 403
    assert world.audit(ALPHA) == [("refusal", "crm.connect", "hubspot_refused:BAD_AUTH_CODE")]
    bad = world.call("POST", f"/orgs/{ALPHA}/crm/hubspot/callback", world.token(ALPHA), {"x": 1})
    assert bad.status_code == 422


def test_a_portal_connected_to_one_org_is_refused_to_another(world: World) -> None:
    assert connect(world, ALPHA, "101").status_code == 200
    taken = connect(world, BETA, "101")  # beta's person is signed in to alpha's portal
    assert taken.status_code == 403
    assert taken.get_json()["error"]["code"] == "owned_by_another_org"
    assert ALPHA not in taken.get_json()["error"]["message"]
    assert world.audit(BETA) == [("refusal", "crm.connect", "owned_by_another_org")]
    assert len(world.secrets()) == 1  # beta's tokens were never stored (and were revoked)
    assert connect(world, BETA, "202").status_code == 200  # its own portal is fine


def test_tokens_are_refreshed_before_they_expire(world: World) -> None:
    assert connect(world, ALPHA, "101").status_code == 200
    secrets, auth = secret_store(world.deps.settings), hubspot_oauth(world.deps.settings)
    first = connections.access_token(world.deps, secrets, auth, ALPHA)
    assert connections.access_token(world.deps, secrets, auth, ALPHA) == first  # still fresh
    world.clock.now += timedelta(minutes=26)  # 30-minute tokens, refreshed 5 minutes early
    fresh = connections.access_token(world.deps, secrets, auth, ALPHA)
    assert fresh != first
    crm = hubspot_for_token(world.deps.settings, fresh, DbLedger(world.deps.db, ALPHA))
    assert crm.page("contacts", ["email"], limit=1).records[0].id == "1001"
    (row,) = world.rows("SELECT access_expires_at FROM crm_connections")
    assert row["access_expires_at"] == world.clock.now + timedelta(seconds=1800)
    auth.close()


def test_a_revoked_token_pauses_the_connection_with_its_reason(world: World) -> None:
    assert connect(world, ALPHA, "101").status_code == 200
    secrets, auth = secret_store(world.deps.settings), hubspot_oauth(world.deps.settings)
    world.hubspot.accounts.uninstall("101")  # the portal removed the app in HubSpot
    ledger = DbLedger(world.deps.db, ALPHA)

    def client(token: str) -> Any:
        return hubspot_for_token(world.deps.settings, token, ledger)

    with pytest.raises(ConnectionPaused, match="refused the access token"):
        connections.with_client(world.deps, secrets, auth, client, ALPHA, lambda c: c.pipelines())
    status = world.call("GET", f"/orgs/{ALPHA}/crm/hubspot", world.token(ALPHA)).get_json()
    assert status["status"] == "paused"
    assert "INVALID_AUTHENTICATION" in status["paused_reason"]
    assert ("effect", "crm.pause", status["paused_reason"]) in world.audit(ALPHA)
    assert len(world.secrets()) == 1  # nothing deleted: reconnecting picks up from here
    with pytest.raises(ConnectionPaused):
        connections.access_token(world.deps, secrets, auth, ALPHA)
    # reconnecting (after the app is installed again) resumes the same connection
    assert connect(world, ALPHA, "101").status_code == 200
    assert (
        connections.with_client(
            world.deps, secrets, auth, client, ALPHA, lambda c: len(c.pipelines())
        )
        == 2
    )
    auth.close()


def test_a_refused_refresh_token_pauses_too(world: World) -> None:
    assert connect(world, ALPHA, "101").status_code == 200
    secrets, auth = secret_store(world.deps.settings), hubspot_oauth(world.deps.settings)
    world.hubspot.accounts.uninstall("101")
    world.clock.now += timedelta(hours=1)  # the access token is due a refresh
    with pytest.raises(ConnectionPaused, match="BAD_REFRESH_TOKEN"):
        connections.access_token(world.deps, secrets, auth, ALPHA)
    assert world.rows("SELECT status FROM crm_connections") == [{"status": "paused"}]
    auth.close()


def test_disconnect_stops_everything_and_says_so(world: World) -> None:
    assert connect(world, ALPHA, "101").status_code == 200
    stored = json.loads((world.data_dir / "secrets" / world.secrets()[0]).read_text())
    answer = world.call("POST", f"/orgs/{ALPHA}/crm/hubspot/disconnect", world.token(ALPHA), {})
    assert answer.status_code == 200, answer.get_json()
    body = answer.get_json()
    assert body["status"] == "disconnected" and len(body["stopped"]) == 3
    assert "revoked" in body["stopped"][0]
    assert world.secrets() == []
    # HubSpot no longer honours the refresh token, and the portal is free for another org
    refused = httpx.post(
        f"{world.hubspot.url}/oauth/v1/token",
        data={
            "grant_type": "refresh_token",
            "client_id": "colony-app",
            "client_secret": "colony-app-secret",
            "refresh_token": stored["refresh_token"],
        },
    )
    assert refused.status_code == 400 and refused.json()["status"] == "BAD_REFRESH_TOKEN"
    secrets, auth = secret_store(world.deps.settings), hubspot_oauth(world.deps.settings)
    with pytest.raises(NotFound):
        connections.access_token(world.deps, secrets, auth, ALPHA)
    auth.close()
    assert connect(world, BETA, "101").status_code == 200
    assert ("effect", "crm.disconnect", None) in world.audit(ALPHA)


def test_connecting_needs_the_apps_settings(world: World) -> None:
    set_deps_for_tests(
        replace(world.deps, settings=replace(world.deps.settings, hubspot_client_id=None))
    )
    answer = world.call("POST", f"/orgs/{ALPHA}/crm/hubspot/connect", world.token(ALPHA))
    assert answer.status_code == 500 and "COLONY_HUBSPOT" not in answer.get_data(as_text=True)


def test_erasing_the_org_deletes_its_crm_tokens_and_rows(world: World) -> None:
    assert connect(world, ALPHA, "101").status_code == 200
    assert connect(world, BETA, "202").status_code == 200
    secrets = secret_store(world.deps.settings)
    deps = replace(world.deps, blob_store=MemoryBlobStore())  # nothing of the org in a bucket
    job = erasure.request_org(deps, ALPHA, "user_1")
    done = erasure.run_job(deps, job, None, erasure.OrgConnections(secrets=secrets))
    assert done["report"]["complete"] is True
    assert world.secrets() == [connections.secret_name(BETA)]
    assert world.rows("SELECT org_id FROM crm_connections") == [{"org_id": BETA}]


def test_a_grant_without_the_scopes_a_connection_needs_is_refused(world: World) -> None:
    world.hubspot.accounts.withheld = {"crm.objects.deals.write"}
    answer = connect(world, ALPHA, "101")
    assert answer.status_code == 403
    assert "crm.objects.deals.write" in answer.get_json()["error"]["message"]
    assert world.audit(ALPHA) == [("refusal", "crm.connect", "missing_scopes")]
    assert world.rows("SELECT * FROM crm_connections") == [] and world.secrets() == []
    world.hubspot.accounts.withheld = set()
    assert connect(world, BETA, "101").status_code == 200  # the portal was never claimed
