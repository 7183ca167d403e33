"""The admin and data-lifecycle functions, loaded from their real ``main.py`` by the
functions-framework: an org admin's erasure request over HTTP, the Cloud Tasks delivery that
runs it (and resumes it after a failed attempt), and every refusal (another org, no admin
role, no or a bad token, an unknown org) answered with a JSON error, recorded, changing
nothing. Issue 31: every admin route, named with another org's Clerk id by that org's
admin, is refused; another org's job ids are not found."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest

from colony.admin import api as admin_api
from colony.admin import crm as admin_crm
from colony.admin import imports as admin_imports
from colony.admin import notifications as admin_notifications
from colony.admin import research as admin_research
from colony.local.tokens import ensure_local_keys, mint_local_token
from colony.ports import BlobStore, org_tag
from colony.registry.functions import ERASURE_QUEUE
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
from tests.erasure_seed import Seeded, dump, object_bytes, seed_org
from tests.test_admin_org_data import ICP, SEQUENCES, SETTINGS

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
    drive: DriveServer
    blobs: BlobStore

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
        yield Admin(db, tmp_path, transport, langfuse, alpha, api, runner, install, drive, blobs)
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
        "research",
    }


# Every admin route, with a body that would change something were it accepted. Any route the
# admin API adds must be listed here (``test_the_route_table_covers_every_admin_route``).
A_JOB = f"{ALPHA}_imp1"  # alpha's import job (tests.erasure_seed)
ROUTES: list[tuple[str, str, Any]] = [
    ("POST", f"/orgs/{ALPHA}/erasure", {}),
    ("POST", f"/orgs/{ALPHA}/contacts/{ALPHA}_c1/erasure", {}),
    ("GET", f"/orgs/{ALPHA}/retention", None),
    ("PUT", f"/orgs/{ALPHA}/retention", {"days": {"transcripts": 1}}),
    ("GET", f"/orgs/{ALPHA}/icp", None),
    ("PUT", f"/orgs/{ALPHA}/icp", ICP),
    ("GET", f"/orgs/{ALPHA}/sequences", None),
    ("PUT", f"/orgs/{ALPHA}/sequences", SEQUENCES),
    ("GET", f"/orgs/{ALPHA}/settings", None),
    ("PUT", f"/orgs/{ALPHA}/settings", SETTINGS),
    ("GET", f"/orgs/{ALPHA}/notion", None),
    (
        "POST",
        f"/orgs/{ALPHA}/notion",
        {"workspace_id": f"ws-{ALPHA}", "token": "secret_x", "domains": {"a" * 32: "KC-01"}},
    ),
    ("GET", f"/orgs/{ALPHA}/drive/channels", None),
    ("POST", f"/orgs/{ALPHA}/drive/watch", {"folder_id": f"folder-{ALPHA}"}),
    ("GET", f"/orgs/{ALPHA}/drive/folders/folder-{ALPHA}", None),
    ("GET", f"/orgs/{ALPHA}/imports", None),
    (
        "POST",
        f"/orgs/{ALPHA}/imports",
        {"kind": "prospects", "format": "csv", "filename": "x.csv", "size_bytes": 10},
    ),
    ("GET", f"/orgs/{ALPHA}/imports/{A_JOB}", None),
    ("POST", f"/orgs/{ALPHA}/imports/{A_JOB}/start", {}),
    ("GET", f"/orgs/{ALPHA}/imports/{A_JOB}/errors.csv", None),
    ("POST", f"/orgs/{ALPHA}/research", {"domain": "mercyridge.example"}),
    ("GET", f"/orgs/{ALPHA}/research/mercyridge.example", None),
    ("GET", f"/orgs/{ALPHA}/crm/hubspot", None),
    ("POST", f"/orgs/{ALPHA}/crm/hubspot/connect", {}),
    ("POST", f"/orgs/{ALPHA}/crm/hubspot/callback", {"code": "c", "state": "s"}),
    ("POST", f"/orgs/{ALPHA}/crm/hubspot/disconnect", {}),
    (
        "PUT",
        f"/orgs/{ALPHA}/notifications/slack",
        {"team_id": "T0ALPHA", "bot_token": "xoxb-alpha-0123456789"},
    ),
    ("PUT", f"/orgs/{ALPHA}/notifications/brief", {"brief_at": "07:30"}),
]


def test_the_route_table_covers_every_admin_route() -> None:
    """Each route pattern of ``colony.admin.api`` (and its imports routes) is tried below,
    with another org's id where it takes one (the erasure job route: by job id, further down)."""
    patterns = [v for v in vars(admin_api).values() if isinstance(v, re.Pattern)]
    patterns += [admin_imports.IMPORTS, admin_research.RESEARCH, admin_crm.CRM]
    patterns += [admin_notifications.NOTIFICATIONS]
    tried = [path for _, path, _ in ROUTES] + [f"/erasures/{ALPHA}_job"]
    assert [p.pattern for p in patterns if not any(p.match(t) for t in tried)] == []
    assert [t for t in tried if not any(p.match(t) for p in patterns)] == []


def _outside(admin: Admin) -> tuple[Any, ...]:
    """What a request could change outside our rows: queued tasks, Drive calls, stored
    objects and tokens."""
    secrets = sorted(p.name for p in (admin.data_dir / "secrets").glob("*"))
    return (
        dict(admin.transport.tasks),
        len(admin.drive.requests),
        object_bytes(admin.blobs, ALPHA),
        secrets,
    )


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_another_orgs_admin_naming_this_org_is_refused_on_every_route(
    admin: Admin, method: str, path: str, body: Any
) -> None:
    before, outside, recorded = admin.state(), _outside(admin), len(admin.rejections())
    headers = {"Authorization": f"Bearer {admin.token(BETA)}"}
    answer = admin.api.open(path, method=method, json=body, headers=headers)
    assert answer.status_code == 403, answer.get_json()
    error = answer.get_json()["error"]
    assert error["code"] == "org_scope" and ALPHA not in error["message"]
    [*_, refusal] = admin.rejections()
    assert len(admin.rejections()) == recorded + 1
    assert (refusal["claimed_org_id"], refusal["reason"]) == (
        ALPHA,
        "forbidden: the token is for another org",
    )
    assert admin.state() == before and _outside(admin) == outside


def test_another_orgs_job_ids_under_ones_own_org_are_not_found(admin: Admin) -> None:
    """Job ids are alpha's to read: beta's admin, on beta's own paths, finds none of them
    (as if they did not exist; ``test_admin_imports`` does the same over real processes)."""
    job = admin.post(f"/orgs/{ALPHA}/erasure", admin.token(ALPHA)).get_json()["job_id"]
    before, outside = admin.state(), _outside(admin)
    headers = {"Authorization": f"Bearer {admin.token(BETA)}"}
    for method, path in (
        ("GET", f"/erasures/{job}"),
        ("GET", f"/orgs/{BETA}/imports/{A_JOB}"),
        ("POST", f"/orgs/{BETA}/imports/{A_JOB}/start"),
        ("GET", f"/orgs/{BETA}/imports/{A_JOB}/errors.csv"),
        ("POST", f"/orgs/{BETA}/contacts/{ALPHA}_c1/erasure"),
    ):
        answer = admin.api.open(path, method=method, json={}, headers=headers)
        assert answer.status_code == 404, (path, answer.get_json())
        assert answer.get_json()["error"]["code"] == "not_found"
    assert admin.state() == before and _outside(admin) == outside
    mine = admin.api.get(
        f"/erasures/{job}", headers={"Authorization": f"Bearer {admin.token(ALPHA)}"}
    )
    assert mine.status_code == 200 and mine.get_json()["org_id"] == ALPHA


def test_an_admin_asks_for_a_company_to_be_researched_and_reads_what_was_kept(
    admin: Admin,
) -> None:
    """``POST /orgs/{org}/research`` queues one research task (a second ask joins it); the
    status shows the org's own research (alpha's seed: a pass over mercyridge.example) and
    nothing of another org's; a value that names no company is a 422 that queues nothing."""
    token = admin.token(ALPHA)
    before = dict(admin.transport.tasks)
    asked = admin.post(f"/orgs/{ALPHA}/research", token, {"domain": "https://www.Acme.example/x"})
    assert asked.status_code == 202 and asked.get_json() == {
        "domain": "acme.example",
        "state": "started",
    }
    again = admin.post(f"/orgs/{ALPHA}/research", token, {"domain": "acme.example"})
    assert again.get_json()["state"] == "running"
    queued = [t for n, t in admin.transport.tasks.items() if n not in before]
    assert [t.target for t in queued] == ["research"]
    shown = admin.api.get(
        f"/orgs/{ALPHA}/research/mercyridge.example", headers={"Authorization": f"Bearer {token}"}
    ).get_json()
    assert shown["job"]["outcome"] == "researched" and {s["role"] for s in shown["sources"]} == {
        "about",
        "leadership",
    }
    assert all("text" not in s for s in shown["sources"])
    beta = admin.api.get(
        f"/orgs/{BETA}/research/acme.example",
        headers={"Authorization": f"Bearer {admin.token(BETA)}"},
    ).get_json()
    assert beta == {"domain": "acme.example", "job": None, "sources": []}
    for bad in ("169.254.169.254", "localhost", "http://127.0.0.1/", "metadata.google.internal"):
        refused = admin.post(f"/orgs/{ALPHA}/research", token, {"domain": bad})
        assert refused.status_code == 422, bad
    assert len(admin.transport.tasks) == len(before) + 1
