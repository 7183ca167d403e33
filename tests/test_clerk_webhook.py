"""The Clerk webhook, loaded from its real ``main.py`` by the functions-framework, against the
real PostgreSQL: organization events signed exactly as Svix signs them (the HMAC computed
here from Svix's documented scheme, not by the verifier under test) create, rename and erase
an org; replays are no-ops; and every unsigned, forged, stale or malformed delivery is a JSON
4xx, recorded as a rejection, changing nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.registry.functions import ERASURE_QUEUE
from colony.runtime.deps import set_deps_for_tests
from colony.settings import Settings
from colony.store import fetch_all
from colony.store.tenants.orgs import DEFAULT_ICP_DESCRIPTION
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.langfuse_server import LangfuseServer
from tests.apps import registered_app
from tests.conftest import APP_ROLE, Gcs, PgDB, wait_for

KEY = b"clerk-test-signing-key-32-bytes!"
SECRET = "whsec_" + base64.b64encode(KEY).decode()
ORG = "org_2abcDEF123"


def svix_headers(body: bytes, msg_id: str, *, key: bytes = KEY, at: int | None = None) -> dict:
    """Svix's scheme (docs.svix.com, "Verifying Webhooks Manually"): the key is the base64
    after ``whsec_``; the signature is base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")),
    sent as ``v1,<signature>``."""
    timestamp = str(at if at is not None else int(time.time()))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    signature = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return {"svix-id": msg_id, "svix-timestamp": timestamp, "svix-signature": f"v1,{signature}"}


def event(kind: str, org: str = ORG, name: str | None = "Acme Health") -> bytes:
    data: dict[str, Any] = {"id": org, "object": "organization", "slug": "acme"}
    if name is not None:
        data["name"] = name
    return json.dumps({"type": kind, "object": "event", "data": data}).encode()


@dataclass
class Clerk:
    db: PgDB
    transport: InlineTransport
    api: Any

    def post(self, body: bytes, headers: dict[str, str]) -> Any:
        return self.api.post("/", data=body, content_type="application/json", headers=headers)

    def send(self, body: bytes, msg_id: str) -> Any:
        return self.post(body, svix_headers(body, msg_id))

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return self.db.owner_rows(sql)

    def state(self) -> tuple[Any, ...]:
        return (
            self.rows("SELECT id, name FROM organizations ORDER BY id"),
            self.rows("SELECT org_id, version, description FROM icp_definitions ORDER BY 1"),
            self.rows("SELECT org_id, event_id FROM processed_events ORDER BY 1, 2"),
            self.rows("SELECT target_org, status FROM erasure_jobs ORDER BY 1"),
            sorted(self.transport.tasks),
        )

    def rejections(self) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT event_id, reason FROM rejected_deliveries"
            " WHERE function = 'clerk-webhook' ORDER BY id"
        )


@pytest.fixture
def clerk(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[Clerk]:
    settings = Settings.from_env(
        {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_EMBEDDING_DIM": str(testdb.dim),
            "COLONY_CLERK_WEBHOOK_SECRET": SECRET,
        }
    )
    transport = InlineTransport()
    set_deps_for_tests(local_deps(settings, testdb.app(), transport))
    yield Clerk(testdb, transport, registered_app("clerk-webhook", monkeypatch))
    set_deps_for_tests(None)


def test_created_makes_the_org_and_its_defaults_once(clerk: Clerk) -> None:
    body = event("organization.created")
    answer = clerk.send(body, "msg_created_1")
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json() == {
        "status": "applied",
        "event": "organization.created",
        "org_id": ORG,
        "default_icp": True,
    }
    assert clerk.rows("SELECT id, name FROM organizations") == [{"id": ORG, "name": "Acme Health"}]
    (icp,) = clerk.rows("SELECT org_id, version, description, tiers, active FROM icp_definitions")
    assert icp["org_id"] == ORG and icp["active"] and icp["description"] == DEFAULT_ICP_DESCRIPTION
    assert [t["tier"] for t in icp["tiers"]] == ["T1", "T2", "T3", "T4", "T5"]
    before = clerk.state()
    # Svix redelivers with the same id (a new timestamp and signature): a no-op
    again = clerk.send(body, "msg_created_1")
    assert again.status_code == 200 and again.get_json()["status"] == "duplicate"
    assert clerk.state() == before


def test_updated_renames_and_never_resets_the_icp(clerk: Clerk) -> None:
    clerk.send(event("organization.created"), "msg_1")
    owner = clerk.db.owner_connection()
    owner.cursor().execute(
        "UPDATE icp_definitions SET description = 'our own' WHERE org_id = %s", (ORG,)
    )
    owner.commit()
    owner.close()
    answer = clerk.send(event("organization.updated", name="Acme Health Partners"), "msg_2")
    assert answer.status_code == 200 and answer.get_json()["default_icp"] is False
    assert clerk.rows("SELECT name FROM organizations") == [{"name": "Acme Health Partners"}]
    assert clerk.rows("SELECT description FROM icp_definitions") == [{"description": "our own"}]


def test_updated_before_created_still_makes_the_org(clerk: Clerk) -> None:
    """Svix does not order deliveries: an update may arrive first."""
    assert clerk.send(event("organization.updated", name="Early"), "msg_u").status_code == 200
    assert clerk.send(event("organization.created", name="Late"), "msg_c").status_code == 200
    assert clerk.rows("SELECT name FROM organizations") == [{"name": "Late"}]
    assert len(clerk.rows("SELECT 1 FROM icp_definitions")) == 1


def test_deleted_hands_the_org_to_the_erasure_queue(clerk: Clerk) -> None:
    clerk.send(event("organization.created"), "msg_1")
    deleted = event("organization.deleted", name=None)
    answer = clerk.send(deleted, "msg_del")
    assert answer.status_code == 200, answer.get_json()
    job_id = answer.get_json()["job_id"]
    assert answer.get_json() == {"status": "erasing", "org_id": ORG, "job_id": job_id}
    (task,) = clerk.transport.tasks.values()
    assert task.queue == ERASURE_QUEUE and task.target == "data-lifecycle"
    assert json.loads(task.body)["task"]["job_id"] == job_id
    jobs = clerk.rows("SELECT target_org, status, requested_by FROM erasure_jobs")
    assert jobs == [{"target_org": ORG, "status": "pending", "requested_by": "clerk:msg_del"}]
    # a redelivery finds the open job: the same job, the same named task
    again = clerk.send(deleted, "msg_del")
    assert again.get_json()["job_id"] == job_id and len(clerk.transport.tasks) == 1


def test_deleted_for_an_unknown_org_is_acknowledged_and_ignored(clerk: Clerk) -> None:
    answer = clerk.send(event("organization.deleted", org="org_never", name=None), "msg_x")
    assert answer.status_code == 200 and answer.get_json()["status"] == "ignored"
    assert clerk.transport.tasks == {}


def test_other_clerk_events_are_acknowledged_and_ignored(clerk: Clerk) -> None:
    body = json.dumps({"type": "user.created", "data": {"id": "user_1"}}).encode()
    answer = clerk.send(body, "msg_user")
    assert answer.status_code == 200 and answer.get_json()["status"] == "ignored"
    assert clerk.rows("SELECT id FROM organizations") == []


GOOD = event("organization.created")
NOW = int(time.time())


def _headers(case: str) -> tuple[bytes, dict[str, str], int]:
    """(body, headers, expected status) for one bad delivery."""
    signed = svix_headers(GOOD, "msg_bad")
    if case == "unsigned":
        return GOOD, {}, 401
    if case == "no signature header":
        return GOOD, {k: v for k, v in signed.items() if k != "svix-signature"}, 401
    if case == "wrong secret":
        return GOOD, svix_headers(GOOD, "msg_bad", key=b"another-key"), 401
    if case == "body changed after signing":
        return event("organization.created", name="Evil"), signed, 401
    if case == "id changed after signing":
        return GOOD, {**signed, "svix-id": "msg_other"}, 401
    if case == "replayed after the tolerance":
        return GOOD, svix_headers(GOOD, "msg_bad", at=int(time.time()) - 6 * 60), 401
    if case == "from the future":
        return GOOD, svix_headers(GOOD, "msg_bad", at=int(time.time()) + 6 * 60), 401
    if case == "garbage signature":
        return GOOD, {**signed, "svix-signature": "not-a-signature"}, 401
    if case == "garbage timestamp":
        return GOOD, {**signed, "svix-timestamp": "yesterday"}, 401
    malformed = {
        "signed but no data": json.dumps({"type": "organization.created"}).encode(),
        "signed but a bad org id": event("organization.created", org="org/../x"),
        "signed but no name": event("organization.created", name=None),
        "signed but not an object": b"[1, 2]",
    }
    body = malformed[case]
    return body, svix_headers(body, "msg_bad"), 400


BAD = [
    "unsigned",
    "no signature header",
    "wrong secret",
    "body changed after signing",
    "id changed after signing",
    "replayed after the tolerance",
    "from the future",
    "garbage signature",
    "garbage timestamp",
    "signed but no data",
    "signed but a bad org id",
    "signed but no name",
    "signed but not an object",
]


@pytest.mark.parametrize("case", BAD)
def test_bad_deliveries_are_refused_recorded_and_change_nothing(clerk: Clerk, case: str) -> None:
    before = clerk.state()
    body, headers, status = _headers(case)
    answer = clerk.post(body, headers)
    assert answer.status_code == status, (case, answer.get_json())
    assert answer.mimetype == "application/json"
    assert set(answer.get_json()["error"]) == {"code", "message"}
    assert "Traceback" not in answer.get_data(as_text=True)
    (rejection,) = clerk.rejections()
    assert rejection["reason"] and SECRET not in rejection["reason"]
    assert clerk.state() == before


def test_an_unconfigured_secret_is_a_500_that_names_nothing(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> None:
    settings = Settings.from_env({"COLONY_DB_MODE": "dsn", "COLONY_DB_DSN": testdb.dsn(APP_ROLE)})
    set_deps_for_tests(local_deps(settings, testdb.app(), InlineTransport()))
    try:
        api = registered_app("clerk-webhook", monkeypatch)
        answer = api.post(
            "/", data=GOOD, content_type="application/json", headers=svix_headers(GOOD, "m")
        )
    finally:
        set_deps_for_tests(None)
    assert answer.status_code == 500 and "COLONY_CLERK" not in answer.get_data(as_text=True)


def test_an_orgs_whole_life_over_http(testdb: PgDB, gcs: Gcs, tmp_path: Path) -> None:
    """The real servers (functions-framework processes) over real HTTP: Clerk creates the
    org, its admin shapes it through the admin function, Clerk deletes it, and the erasure
    job it opens runs in data-lifecycle (via the local Cloud Tasks stand-in) to the end."""
    with LangfuseServer() as langfuse:
        env = {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_EMBEDDING_DIM": str(testdb.dim),
            "COLONY_TRANSPORT": "local",
            "COLONY_DATA_DIR": str(tmp_path),
            "COLONY_CLERK_WEBHOOK_SECRET": SECRET,
            "LANGFUSE_PUBLIC_KEY": langfuse.public_key,
            "LANGFUSE_SECRET_KEY": langfuse.secret_key,
            "LANGFUSE_HOST": langfuse.url,
            **gcs.env,
        }
        names = ("clerk-webhook", "admin", "data-lifecycle")
        with (
            FunctionServers(env, names, log_dir=tmp_path / "logs") as servers,
            httpx.Client(timeout=30) as http,
        ):
            hook = servers.urls["clerk-webhook"]

            def deliver(body: bytes, msg_id: str) -> httpx.Response:
                headers = {**svix_headers(body, msg_id), "content-type": "application/json"}
                return http.post(hook, content=body, headers=headers)

            created = deliver(event("organization.created"), "msg_http_1")
            assert created.status_code == 200, created.text
            forged = http.post(hook, content=GOOD, headers={"content-type": "application/json"})
            assert forged.status_code == 401 and forged.json()["error"]["code"]
            token = mint_local_token(tmp_path, ORG, org_claim="v2")
            bearer = {"Authorization": f"Bearer {token}"}
            admin = servers.urls["admin"]
            icp = http.get(f"{admin}/orgs/{ORG}/icp", headers=bearer)
            assert icp.status_code == 200 and icp.json()["version"] == 1
            settings = {
                "competitors": ["CareSpace"],
                "sending": {"daily_cap": 50, "per_domain_hourly": 2},
            }
            put = http.put(f"{admin}/orgs/{ORG}/settings", json=settings, headers=bearer)
            assert put.status_code == 200, put.text
            stranger = mint_local_token(tmp_path, "org_other", org_claim="v2")
            other = http.get(
                f"{admin}/orgs/{ORG}/settings", headers={"Authorization": f"Bearer {stranger}"}
            )
            assert other.status_code == 403
            deleted = deliver(event("organization.deleted", name=None), "msg_http_2")
            assert deleted.status_code == 200 and deleted.json()["status"] == "erasing"
            job = deleted.json()["job_id"]
            owner = testdb.owner_connection()
            try:

                def done() -> bool:
                    rows = fetch_all(
                        owner.cursor(), "SELECT status FROM erasure_jobs WHERE id = %s", (job,)
                    )
                    owner.rollback()
                    return bool(rows) and rows[0]["status"] == "done"

                wait_for(done, what="the org's erasure job to finish")
                cur = owner.cursor()
                assert fetch_all(cur, "SELECT id FROM organizations") == []
                assert fetch_all(cur, "SELECT 1 FROM org_settings") == []
                assert fetch_all(cur, "SELECT 1 FROM icp_definitions") == []
            finally:
                owner.close()
