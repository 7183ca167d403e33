"""The admin and data-lifecycle functions, loaded from their real ``main.py`` by the
functions-framework: an org admin's erasure request over HTTP, the Cloud Tasks delivery that
runs it (and resumes it after a failed attempt), and every refusal (another org, no admin
role, no or a bad token, an unknown org) answered with a JSON error, recorded, changing
nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest

from colony.ports import BlobStore, org_tag
from colony.registry.functions import ERASURE_QUEUE
from colony.runtime.auth import ensure_local_keys, mint_local_token
from colony.runtime.compose import lifecycle
from colony.runtime.deps import set_deps_for_tests
from colony.runtime.faults import Faults
from colony.settings import Settings
from colony.store import fetch_all
from colony.testing.drive_server import DriveServer
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.langfuse_server import LangfuseServer
from tests.apps import registered_app
from tests.conftest import APP_ROLE, Gcs, PgDB
from tests.erasure_seed import Seeded, dump, seed_org

DIM = 8
ALPHA, BETA = "org_alpha", "org_beta"


@dataclass
class Admin:
    db: PgDB
    data_dir: Path
    transport: InlineTransport
    langfuse: LangfuseServer
    alpha: Seeded
    api: Any  # the admin function's test client
    lifecycle: Any  # the data-lifecycle function's test client
    install: Callable[[Faults], None]

    def token(self, org: str, *, role: str | None = "org:admin", **extra: Any) -> str:
        """A Clerk v1 session token signed with the local key (``org_role`` as given)."""
        keys = ensure_local_keys(self.data_dir)
        now = datetime.now(UTC)
        claims = {"sub": "user_1", "org_id": org, "iat": now, "exp": now + timedelta(hours=1)}
        if role is not None:
            claims["org_role"] = role
        claims.update(extra)
        private = keys.private_path.read_bytes()
        return jwt.encode(claims, private, algorithm="RS256")

    def post(self, path: str, token: str | None, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.api.post(path, json=body if body is not None else {}, headers=headers)

    def dump(self, org: str) -> dict[str, list[str]]:
        return self.db.as_owner(lambda conn: dump(conn, org))

    def state(self) -> tuple[dict[str, list[str]], ...]:
        """Both orgs' rows (and any an unknown org could have), less the rejections log."""
        dumps = (self.dump(ALPHA), self.dump(BETA), self.dump("org_nobody"))
        return tuple({t: r for t, r in d.items() if t != "rejected_deliveries"} for d in dumps)

    def rejections(self) -> list[dict[str, Any]]:
        conn = self.db.owner_connection()
        try:
            return fetch_all(
                conn.cursor(),
                "SELECT function, claimed_org_id, reason FROM rejected_deliveries"
                " WHERE function = 'admin' ORDER BY id",
            )
        finally:
            conn.close()

    def run_tasks(self) -> list[Any]:
        """Deliver every erasure task to the data-lifecycle function, as Cloud Tasks does."""
        answers = []
        for task in self.transport.tasks.values():
            assert task.queue == ERASURE_QUEUE and task.target == "data-lifecycle"
            answers.append(
                self.lifecycle.post("/", data=task.body, content_type="application/json")
            )
        return answers


@pytest.fixture
def admin(
    make_db: Callable[..., PgDB],
    gcs: Gcs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_ambient_config: None,
) -> Iterator[Admin]:
    db = make_db(dim=DIM)
    blobs: BlobStore = gcs.store  # type: ignore[assignment]
    conn = db.owner_connection()
    alpha = seed_org(conn, blobs, ALPHA, DIM)
    seed_org(conn, blobs, BETA, DIM)
    conn.close()
    with LangfuseServer() as langfuse, DriveServer() as drive:  # the seeded channel is stopped
        langfuse.add_trace("alpha-1", [org_tag(ALPHA)], {})
        langfuse.add_trace("beta-1", [org_tag(BETA)], {})
        settings = Settings.from_env(
            {
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": db.dsn(APP_ROLE),
                "COLONY_EMBEDDING_DIM": str(DIM),
                "COLONY_DATA_DIR": str(tmp_path),
                "LANGFUSE_PUBLIC_KEY": langfuse.public_key,
                "LANGFUSE_SECRET_KEY": langfuse.secret_key,
                "LANGFUSE_HOST": langfuse.url,
                "COLONY_DRIVE_BASE_URL": drive.url,
            }
        )
        transport = InlineTransport()
        base = local_deps(settings, db.app(), transport, blobs=blobs)
        monkeypatch.setattr(lifecycle, "_built", {})  # this test's Langfuse, built on first use

        def install(faults: Faults) -> None:
            set_deps_for_tests(replace(base, faults=faults))

        install(Faults())
        api = registered_app("admin", monkeypatch)
        runner = registered_app("data-lifecycle", monkeypatch)
        yield Admin(db, tmp_path, transport, langfuse, alpha, api, runner, install)
        set_deps_for_tests(None)


def test_an_org_admin_erases_their_org_through_the_queue(admin: Admin) -> None:
    before_beta = admin.dump(BETA)
    answer = admin.post(f"/orgs/{ALPHA}/erasure", admin.token(ALPHA))
    assert answer.status_code == 202, answer.get_json()
    job_id = answer.get_json()["job_id"]
    assert answer.get_json() == {"job_id": job_id, "status": "pending"}
    # a repeated request is the same job, and the same named task
    assert admin.post(f"/orgs/{ALPHA}/erasure", admin.token(ALPHA)).get_json()["job_id"] == job_id
    assert len(admin.transport.tasks) == 1
    (done,) = admin.run_tasks()
    assert done.status_code == 200, done.get_json()
    report = done.get_json()["report"]
    assert report["complete"] is True and report["traces_left"] == 0
    assert admin.langfuse.trace_ids() == ["beta-1"]
    left = {t: rows for t, rows in admin.dump(ALPHA).items() if rows and t != "erasure_jobs"}
    assert left == {}
    assert admin.dump(BETA) == before_beta
    # the report stays readable by the erased org's admins, and by no other org
    status = admin.api.get(
        f"/erasures/{job_id}", headers={"Authorization": f"Bearer {admin.token(ALPHA)}"}
    )
    assert status.status_code == 200 and status.get_json()["report"] == report
    other = admin.api.get(
        f"/erasures/{job_id}", headers={"Authorization": f"Bearer {admin.token(BETA)}"}
    )
    assert other.status_code == 404


def test_a_failed_attempt_is_retried_by_the_queue_and_resumes(admin: Admin) -> None:
    admin.install(Faults(frozenset({"erasure.after_objects"})))
    answer = admin.post(f"/orgs/{ALPHA}/erasure", admin.token(ALPHA))
    assert answer.status_code == 202
    (failed,) = admin.run_tasks()
    assert failed.status_code == 503 and failed.get_json()["error"]["code"]
    (done,) = admin.run_tasks()  # Cloud Tasks retries the same task
    assert done.status_code == 200 and done.get_json()["report"]["complete"] is True
    assert done.get_json()["phases_done"] == ["connections", "traces", "objects", "indexes", "rows"]


def test_an_admin_erases_one_prospect(admin: Admin) -> None:
    dana = admin.alpha.dana
    answer = admin.post(f"/orgs/{ALPHA}/contacts/{dana}/erasure", admin.token(ALPHA))
    assert answer.status_code == 202
    (done,) = admin.run_tasks()
    report = done.get_json()["report"]
    assert report["complete"] is True and report["contact_id"] == dana
    left = {t: rows for t, rows in admin.dump(dana).items() if rows and t != "erasure_jobs"}
    assert left == {}


V2_MEMBER = {"v": 2, "o": {"id": ALPHA, "rol": "member"}}


@pytest.mark.parametrize(
    ("case", "path", "token", "status"),
    [
        ("another org's admin", f"/orgs/{ALPHA}/erasure", (BETA, "org:admin", {}), 403),
        ("a member, not an admin", f"/orgs/{ALPHA}/erasure", (ALPHA, "org:member", {}), 403),
        ("no role claim at all", f"/orgs/{ALPHA}/erasure", (ALPHA, None, {}), 403),
        ("a v2 member", f"/orgs/{ALPHA}/erasure", (None, None, V2_MEMBER), 403),
        ("no token", f"/orgs/{ALPHA}/erasure", None, 401),
        ("a garbage token", f"/orgs/{ALPHA}/erasure", "not-a-jwt", 401),
        ("an unknown org", "/orgs/org_nobody/erasure", ("org_nobody", "org:admin", {}), 404),
        (
            "another org's contact",
            f"/orgs/{ALPHA}/contacts/{BETA}_c1/erasure",
            (ALPHA, "org:admin", {}),
            404,
        ),
        ("a dot-dot org", "/orgs/../erasure", (ALPHA, "org:admin", {}), 403),
        ("a bad path", f"/orgs/{ALPHA}/erasure/now", (ALPHA, "org:admin", {}), 404),
    ],
)
def test_bad_requests_are_refused_recorded_and_change_nothing(
    admin: Admin, case: str, path: str, token: Any, status: int
) -> None:
    before, recorded = admin.state(), len(admin.rejections())
    if isinstance(token, tuple):
        org, role, extra = token
        # org None: a v2 token, its org and role nested under "o"
        bearer = _v2(admin, extra) if org is None else admin.token(org, role=role, **extra)
    else:
        bearer = token
    answer = admin.post(path, bearer)
    assert answer.status_code == status, (case, answer.get_json())
    assert answer.mimetype == "application/json"
    assert set(answer.get_json()["error"]) == {"code", "message"}
    # audited: a refusal adds its one record (ids and the reason), and changes nothing else
    assert len(admin.rejections()) == recorded + (status in (401, 403))
    assert admin.transport.tasks == {}
    assert admin.state() == before


def _v2(admin: Admin, extra: dict[str, Any]) -> str:
    keys = ensure_local_keys(admin.data_dir)
    now = datetime.now(UTC)
    claims = {"sub": "user_1", "iat": now, "exp": now + timedelta(hours=1), **extra}
    return jwt.encode(claims, keys.private_path.read_bytes(), algorithm="RS256")


def test_a_v2_admin_token_is_an_admin(admin: Admin) -> None:
    v2 = mint_local_token(admin.data_dir, ALPHA, org_claim="v2")  # o.rol = "admin"
    assert admin.post(f"/orgs/{ALPHA}/erasure", v2).status_code == 202


def test_retention_periods_within_the_deployment_limits(admin: Admin) -> None:
    headers = {"Authorization": f"Bearer {admin.token(ALPHA)}"}
    current = admin.api.get(f"/orgs/{ALPHA}/retention", headers=headers).get_json()
    assert current["days"]["chat_events"] == 30  # the seed's own setting
    assert current["days"]["llm_calls"] == current["limits"]["llm_calls"]
    too_long = {"days": {"transcripts": current["limits"]["transcripts"] + 1}}
    refused = admin.api.put(f"/orgs/{ALPHA}/retention", json=too_long, headers=headers)
    assert refused.status_code == 400 and "limit" in refused.get_json()["error"]["message"]
    unknown = admin.api.put(
        f"/orgs/{ALPHA}/retention", json={"days": {"emails": 3}}, headers=headers
    )
    assert unknown.status_code == 400
    ok = admin.api.put(
        f"/orgs/{ALPHA}/retention", json={"days": {"transcripts": 30}}, headers=headers
    )
    assert ok.status_code == 200 and ok.get_json()["days"]["transcripts"] == 30
    member = {"Authorization": f"Bearer {admin.token(ALPHA, role='org:member')}"}
    denied = admin.api.put(
        f"/orgs/{ALPHA}/retention", json={"days": {"transcripts": 1}}, headers=member
    )
    assert denied.status_code == 403
    assert (
        admin.api.get(f"/orgs/{ALPHA}/retention", headers=headers).get_json()["days"]["transcripts"]
        == 30
    )


def test_the_daily_retention_run_is_a_data_lifecycle_task(admin: Admin) -> None:
    body = json.dumps({"task": {"kind": "retention", "org_id": ALPHA}})
    answer = admin.lifecycle.post("/", data=body, content_type="application/json")
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["org_id"] == ALPHA and set(answer.get_json()["expired"]) == {
        "transcripts",
        "chat_events",
        "llm_calls",
        "outbox_bodies",
    }
