"""Notion per workspace (issue 17 item 4): an org admin connects a workspace over the admin
API, its token goes to Secret Manager, its mapped databases are backfilled by durable,
checkpointed steps on the re-embed queue (a 429 reschedules the step after its Retry-After),
and the daily reconciliation re-syncs only what changed since. The workspace and every mapped
id must be the token's (issue 31), tried from outside as a second tenant would, and the daily
reconciliation proves each workspace again with its stored token, releasing a squat made
before connect proved anything.

Real parts: embedded PostgreSQL, the admin, reembed and notion-webhook functions loaded from
their real ``main.py`` by functions-framework, the local Notion stand-in (per-token
workspaces, pagination, 429s, scripted 503s) and a Secret Manager stand-in behind the real
REST adapter. Tasks are delivered to the reembed function as Cloud Tasks would (the in-memory
transport records them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest

from colony.adapters.notion import notion_for_token
from colony.contracts.admin import NotionConnect
from colony.contracts.reembed import NotionSyncStep
from colony.errors import OrgScopeError
from colony.flows.knowledge import notion_backfill, notion_webhook, notion_workspaces
from colony.knowledge import KnowledgeStore
from colony.local.tokens import ensure_local_keys
from colony.registry.functions import NOTION_REEMBED_QUEUE
from colony.runtime.deps import Deps, set_deps_for_tests
from colony.runtime.notion_clients import WorkspaceClients, secret_store
from colony.settings import Settings
from colony.store import fetch_all
from colony.testing.fakes import CountingEmbedder
from colony.testing.inline import FIXED_NOW, InlineTransport, local_deps
from colony.testing.notion_server import (
    EDITED,
    NotionServer,
    block,
    dashed,
    signed_headers,
    webhook_event,
)
from colony.testing.secret_manager_server import SecretManagerServer
from colony.webhooks import sign
from tests.apps import registered_app
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("ENT-007", "fn:reembed")

ALPHA, BETA = "org_alpha", "org_beta"
WS_ALPHA, WS_BETA = "ws-alpha", "ws-beta"
TOKEN_ALPHA = "secret_alpha_notion_token"
TOKEN_BETA = "secret_beta_notion_token"
SIGNING = "notion-signing-secret"
DB_PRODUCT = "a" * 32  # 30 pages → KC-01 (two steps of PAGE_SIZE 25)
PAGE_VOICE = "b" * 32  # a single mapped page → KC-07
DB_BETA = "c" * 32
PAGES = [f"{n:032x}" for n in range(1, 31)]


def blocks(n: int, extra: str = "") -> list[dict[str, Any]]:
    return [block("paragraph", f"Page {n} explains ZoomProp lease analytics. {extra}" * 5)]


@dataclass
class Env:
    db: PgDB
    deps: Deps
    notion: NotionServer
    secrets: SecretManagerServer
    embedder: CountingEmbedder
    transport: InlineTransport
    admin: Any
    worker: Any
    hook: Any  # the notion-webhook function
    data_dir: Path
    delivered: set[str]

    def token(self, org: str, role: str | None = "org:admin") -> str:
        keys = ensure_local_keys(self.data_dir)
        now = datetime.now(UTC)
        claims: dict[str, Any] = {"sub": "user_1", "org_id": org, "iat": now}
        claims["exp"] = now + timedelta(hours=1)
        if role:
            claims["org_role"] = role
        return jwt.encode(claims, keys.private_path.read_bytes(), algorithm="RS256")

    def connect(self, org: str, body: dict[str, Any], token: str | None = None) -> Any:
        bearer = token if token is not None else self.token(org)
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        return self.admin.post(f"/orgs/{org}/notion", json=body, headers=headers)

    def drain(self, limit: int = 50) -> list[Any]:
        """Deliver every task not yet delivered to the reembed function, until none is left
        (each step queues the next), as Cloud Tasks would."""
        answers = []
        for _ in range(limit):
            fresh = [n for n in self.transport.tasks if n not in self.delivered]
            if not fresh:
                return answers
            for name in fresh:
                self.delivered.add(name)
                task = self.transport.tasks[name]
                assert task.queue == NOTION_REEMBED_QUEUE and task.target == "reembed"
                answers.append(self.post_task(task.body))
        raise AssertionError("the backfill never stopped queueing steps")

    def post_task(self, body: bytes) -> Any:
        answer = self.worker.post("/", data=body, content_type="application/json")
        assert answer.status_code == 200, answer.get_json()
        return answer.get_json()

    def rows(self, org: str, sql: str) -> list[dict[str, Any]]:
        with self.deps.db.transaction(org) as cur:
            return fetch_all(cur, sql)

    def audit(self, org: str) -> list[dict[str, Any]]:
        return self.rows(
            org, "SELECT event, actor, channel, action, reason, detail FROM audit_log ORDER BY id"
        )


@pytest.fixture
def env(testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    db = testdb.app()
    for org in (ALPHA, BETA):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    embedder = CountingEmbedder()
    with NotionServer() as notion, SecretManagerServer("colony-test") as secrets:
        notion.add_token(TOKEN_ALPHA, WS_ALPHA)  # each workspace's integration token
        notion.add_token(TOKEN_BETA, WS_BETA)
        for n, page in enumerate(PAGES):
            notion.put_page(
                page, f"Product {n}", blocks(n), parent_database=DB_PRODUCT, workspace=WS_ALPHA
            )
        voice = [block("paragraph", "Plain words. " * 20)]
        notion.put_page(PAGE_VOICE, "Brand voice", voice, workspace=WS_ALPHA)
        notion.put_database(DB_BETA, workspace=WS_BETA)
        settings = Settings.from_env(
            {
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
                "COLONY_DATA_DIR": str(tmp_path),
                "COLONY_GCP_PROJECT": "colony-test",
                "COLONY_SECRET_MANAGER_ENDPOINT": secrets.base_url,
                "COLONY_NOTION_BASE_URL": notion.url,
                "COLONY_NOTION_SIGNING_SECRET": SIGNING,
            }
        )
        transport = InlineTransport()
        deps = local_deps(settings, db, transport, knowledge=KnowledgeStore(db, embedder))
        set_deps_for_tests(deps)
        admin = registered_app("admin", monkeypatch)
        worker = registered_app("reembed", monkeypatch)
        hook = registered_app("notion-webhook", monkeypatch)
        yield Env(
            testdb, deps, notion, secrets, embedder, transport, admin, worker, hook, tmp_path, set()
        )
        set_deps_for_tests(None)


def body(workspace: str = WS_ALPHA, token: str = TOKEN_ALPHA, **domains: str) -> dict[str, Any]:
    mapping = domains or {DB_PRODUCT: "KC-01", PAGE_VOICE: "KC-07"}
    return {"workspace_id": workspace, "token": token, "domains": mapping}


def sync_runs(env: Env, org: str = ALPHA) -> list[dict[str, Any]]:
    return env.rows(
        org,
        "SELECT kind, status, step, position, pages_seen, pages_synced, pages_skipped,"
        " rate_limited FROM notion_syncs ORDER BY started_at, id",
    )


def sources(env: Env, org: str = ALPHA) -> dict[str, str]:
    rows = env.rows(org, "SELECT DISTINCT source_id, domain FROM kc_chunks WHERE source='notion'")
    return {r["source_id"]: r["domain"] for r in rows}


@pytest.mark.covers("KC-01", "KC-07")
def test_connecting_a_workspace_backfills_every_mapped_database_over_http(env: Env) -> None:
    answer = env.connect(ALPHA, body())
    assert answer.status_code == 202, answer.get_json()
    assert TOKEN_ALPHA not in answer.get_data(as_text=True)  # never echoed
    name = notion_workspaces.secret_name(ALPHA, WS_ALPHA)
    assert env.secrets.latest(name) == TOKEN_ALPHA
    [row] = env.rows(ALPHA, "SELECT workspace_id, secret_name FROM notion_workspaces")
    assert row == {"workspace_id": WS_ALPHA, "secret_name": name}  # the name, not the token

    env.drain()
    assert sources(env) == {**{p: "KC-01" for p in PAGES}, PAGE_VOICE: "KC-07"}
    # 30 pages in two query pages, then the single page (the query 404s, so it is read alone)
    [run] = sync_runs(env)
    assert run == {
        "kind": "backfill",
        "status": "done",
        "step": 3,
        "position": 2,
        "pages_seen": 31,
        "pages_synced": 31,
        "pages_skipped": 0,
        "rate_limited": 0,
    }
    queries = env.notion.requests_to("notion.databases.query")
    # the third is the single page's id, which Notion answers 404 as a database
    assert [q.body.get("start_cursor") for q in queries] == [None, dashed(PAGES[25]), None]
    assert {q.header("authorization") for q in queries} == {f"Bearer {TOKEN_ALPHA}"}
    assert len(env.embedder.calls) == 31  # one embedding call per page

    status = env.admin.get(
        f"/orgs/{ALPHA}/notion", headers={"Authorization": f"Bearer {env.token(ALPHA)}"}
    )
    assert status.status_code == 200
    assert status.get_json()["workspaces"][0]["workspace_id"] == WS_ALPHA
    assert status.get_json()["syncs"][0]["status"] == "done"


def test_reconciliation_re_syncs_only_pages_edited_since_and_runs_once_a_day(env: Env) -> None:
    assert env.connect(ALPHA, body()).status_code == 202
    env.drain()
    calls, reads = len(env.embedder.calls), len(env.notion.requests_to("notion.blocks.children"))

    # a missed webhook: page 3 was edited, Notion says so in its last_edited_time
    edited = "2026-12-01T08:00:00.000Z"
    env.notion.put_page(
        PAGES[3],
        "Product 3",
        blocks(3, "Now with CMMS."),
        parent_database=DB_PRODUCT,
        edited=edited,
    )
    reconcile = json.dumps({"kind": "notion.reconcile", "org_id": ALPHA}).encode()
    asked = len(env.notion.requests_to("notion.users.me"))
    started = env.post_task(reconcile)
    assert len(started["started"]) == 1 and started["released"] == []
    # proven again first, with its stored token: still alpha's, so it stays and runs
    [me] = env.notion.requests_to("notion.users.me")[asked:]
    assert me.header("authorization") == f"Bearer {TOKEN_ALPHA}" and env.audit(ALPHA) == []
    env.drain()
    assert env.post_task(reconcile)["started"] == started["started"]  # a retried call
    assert env.drain() == []  # its step 0 is the named task already delivered: no new task
    runs = sync_runs(env)
    assert [r["kind"] for r in runs] == ["backfill", "reconcile"]
    assert runs[1]["status"] == "done"
    assert (runs[1]["pages_synced"], runs[1]["pages_skipped"]) == (1, 30)
    assert len(env.embedder.calls) == calls + 1  # page 3 only
    # only page 3's blocks were read again (the others are skipped unread)
    assert len(env.notion.requests_to("notion.blocks.children")) == reads + 1
    with env.deps.db.transaction(ALPHA) as cur:
        text = fetch_all(cur, "SELECT content FROM kc_chunks WHERE source_id = %s", (PAGES[3],))
    assert "CMMS" in text[0]["content"]


def test_a_rate_limited_step_is_rescheduled_after_retry_after_and_resumes(env: Env) -> None:
    secrets = secret_store(env.deps.settings)
    connect = NotionConnect.model_validate(body())
    with closing(notion_for_token(env.deps.settings, TOKEN_ALPHA)) as notion:
        notion_workspaces.connect(env.deps, secrets, notion, ALPHA, connect, "user_1")
    [first] = env.transport.tasks.values()
    task = NotionSyncStep.model_validate_json(first.body)
    clients = WorkspaceClients(env.deps.settings, secrets)

    env.notion.rate_limit(times=1, retry_after=7)
    answer = notion_backfill.step(env.deps, task, clients)
    assert answer == {"sync_id": task.sync_id, "status": "rate_limited", "retry_after": 7.0}
    [again] = [t for t in env.transport.tasks.values() if t.task_id.endswith("-s0-r1")]
    assert again.delay_seconds == 7.0 and NotionSyncStep.model_validate_json(again.body) == task
    [run] = sync_runs(env)
    assert (run["step"], run["pages_seen"], run["rate_limited"]) == (0, 0, 1)  # not advanced

    # the rescheduled delivery runs the step; the original one, delivered again, is stale
    assert notion_backfill.step(env.deps, task, clients)["status"] == "running"
    tasks = len(env.transport.tasks)
    assert notion_backfill.step(env.deps, task, clients)["status"] == "stale"
    assert len(env.transport.tasks) == tasks  # its re-queue of step 1 is the same named task
    [run] = sync_runs(env)
    assert (run["step"], run["pages_seen"]) == (1, 25)


def test_every_new_endpoint_refuses_other_orgs_and_non_admins(env: Env) -> None:
    assert env.connect(ALPHA, body()).status_code == 202
    alpha_rows = env.rows(ALPHA, "SELECT workspace_id, secret_name FROM notion_workspaces")
    # beta's admin on alpha's path, alpha's non-admin, no token at all
    assert env.connect(ALPHA, body(), env.token(BETA)).status_code == 403
    assert env.connect(ALPHA, body(), env.token(ALPHA, role="org:member")).status_code == 403
    assert env.connect(ALPHA, body(), "").status_code == 401
    read = env.admin.get(f"/orgs/{ALPHA}/notion", headers={"Authorization": "Bearer x"})
    assert read.status_code == 401
    peek = env.admin.get(
        f"/orgs/{ALPHA}/notion", headers={"Authorization": f"Bearer {env.token(BETA)}"}
    )
    assert peek.status_code == 403
    # beta naming alpha's workspace on its own path, with beta's token: refused, nothing of
    # beta's stored (the attack itself: test_a_second_org_cannot_squat_on_another_orgs_workspace)
    taken = env.connect(BETA, body(token=TOKEN_BETA))
    assert taken.status_code == 403 and taken.get_json()["error"]["code"] == "ownership_unproven"
    assert env.secrets.latest(notion_workspaces.secret_name(BETA, WS_ALPHA)) is None
    assert env.rows(BETA, "SELECT * FROM notion_workspaces") == []
    assert env.rows(ALPHA, "SELECT workspace_id, secret_name FROM notion_workspaces") == (
        alpha_rows
    )
    # a task naming beta with alpha's workspace and run: refused before Notion is called
    [first] = env.transport.tasks.values()
    forged = json.loads(first.body) | {"org_id": BETA}
    before = len(env.notion.requests)
    answer = env.worker.post("/", json=forged)
    assert answer.status_code == 403 and len(env.notion.requests) == before
    reembed = {
        "kind": "notion.reembed",
        "org_id": BETA,
        "workspace_id": WS_ALPHA,
        "page_id": PAGES[0],
        "edited_time": EDITED,
    }
    assert env.worker.post("/", json=reembed).status_code == 403
    assert sources(env, BETA) == {}


def test_a_bad_connection_is_a_422_naming_the_field_without_echoing_the_token(env: Env) -> None:
    answer = env.connect(ALPHA, body(**{DB_PRODUCT: "KC-09"}))
    assert answer.status_code == 422
    message = answer.get_json()["error"]["message"]
    assert "domains" in message and TOKEN_ALPHA not in answer.get_data(as_text=True)
    assert env.transport.tasks == {} and env.secrets.values == {}


def test_the_webhook_routes_each_workspace_to_its_own_org(env: Env) -> None:
    assert env.connect(ALPHA, body()).status_code == 202
    beta = body(WS_BETA, TOKEN_BETA, **{DB_BETA: "KC-03"})
    assert env.connect(BETA, beta).status_code == 202
    before = set(env.transport.tasks)
    for workspace, db, org in ((WS_ALPHA, DB_PRODUCT, ALPHA), (WS_BETA, DB_BETA, BETA)):
        event = webhook_event("d" * 32, parent_database=db, workspace_id=workspace)
        answer = notion_webhook.receive(env.deps, event, sign(SIGNING, event))
        assert answer["status"] == "queued", answer
        [name] = set(env.transport.tasks) - before
        before.add(name)
        assert json.loads(env.transport.tasks[name].body)["org_id"] == org
    stranger = webhook_event("d" * 32, parent_database=DB_BETA, workspace_id="ws-nobody")
    with pytest.raises(OrgScopeError, match="not connected"):
        notion_webhook.receive(env.deps, stranger, sign(SIGNING, stranger))
    owner = env.db.owner_connection()
    try:
        refused = fetch_all(
            owner.cursor(),
            "SELECT function, reason FROM rejected_deliveries WHERE function = 'notion-webhook'",
        )
    finally:
        owner.close()
    assert refused and "ws-nobody" in refused[0]["reason"]


def test_the_next_days_reconciliation_is_a_new_run(env: Env) -> None:
    assert env.connect(ALPHA, body()).status_code == 202
    env.drain()
    secrets = secret_store(env.deps.settings)
    clients = WorkspaceClients(env.deps.settings, secrets)
    today = notion_backfill.reconcile(env.deps, ALPHA, clients, secrets)
    tomorrow = notion_backfill.reconcile(
        replace(env.deps, clock=lambda: FIXED_NOW + timedelta(days=1)), ALPHA, clients, secrets
    )
    assert today["started"] != tomorrow["started"]
    nothing = {"org_id": BETA, "started": [], "released": []}
    assert notion_backfill.reconcile(env.deps, BETA, clients, secrets) == nothing


def route(env: Env, workspace: str) -> Any:
    """Notion's event for an edit in ``workspace``'s product database, as the webhook gets it."""
    event = webhook_event(PAGES[0], parent_database=DB_PRODUCT, workspace_id=workspace)
    return notion_webhook.receive(env.deps, event, sign(SIGNING, event))


def nothing_stored(env: Env, org: str) -> None:
    assert env.rows(org, "SELECT * FROM notion_workspaces") == []
    assert env.rows(org, "SELECT * FROM notion_syncs") == []
    assert env.secrets.latest(notion_workspaces.secret_name(org, WS_ALPHA)) is None
    assert env.transport.tasks == {} and sources(env, org) == {}


def test_a_second_org_cannot_squat_on_another_orgs_workspace(env: Env) -> None:
    """Issue 31's attack: beta's admin names alpha's workspace before alpha connects it, so
    that alpha's events would be routed to beta; and maps alpha's database into its own."""
    for token in (TOKEN_BETA, "secret_made_up"):  # beta's own workspace's token; none at all
        squat = env.connect(BETA, body(token=token))
        assert squat.status_code == 403, squat.get_json()
        error = squat.get_json()["error"]
        assert error["code"] == "ownership_unproven" and WS_ALPHA in error["message"]
        assert token not in squat.get_data(as_text=True)
    nothing_stored(env, BETA)
    # only Notion's bot user was asked: no mapped id was read with a token unproven
    assert {r.route for r in env.notion.requests} == {"notion.users.me"}
    assert [
        (e["event"], e["actor"], e["channel"], e["action"], e["reason"]) for e in env.audit(BETA)
    ] == [("refusal", "user_1", "admin", "notion.connect", "ownership_unproven")] * 2
    assert {e["detail"]["workspace_id"] for e in env.audit(BETA)} == {WS_ALPHA}
    logged = json.dumps(env.audit(BETA))
    assert TOKEN_BETA not in logged and "secret_made_up" not in logged  # never the token
    with pytest.raises(OrgScopeError):  # alpha's events go to no org while it is unconnected
        route(env, WS_ALPHA)

    # beta maps alpha's database (and page) into beta's own, proven, workspace: refused, named
    mapping = {DB_BETA: "KC-03", DB_PRODUCT: "KC-01", PAGE_VOICE: "KC-07"}
    smuggled = env.connect(BETA, body(WS_BETA, TOKEN_BETA, **mapping))
    assert smuggled.status_code == 403, smuggled.get_json()
    message = smuggled.get_json()["error"]["message"]
    assert DB_PRODUCT in message and PAGE_VOICE in message and DB_BETA not in message
    nothing_stored(env, BETA)
    assert env.notion.requests_to("notion.databases.query") == []  # none of alpha's listed
    assert env.notion.requests_to("notion.blocks.children") == []  # nor read
    last = env.audit(BETA)[-1]
    assert (last["reason"], last["detail"]["workspace_id"]) == ("ownership_unproven", WS_BETA)
    assert sorted(last["detail"]["unreadable"]) == sorted([DB_PRODUCT, PAGE_VOICE])

    # alpha connects its workspace (named in another case: it is kept as Notion names it),
    # and gets its own events; beta has nothing of alpha's, and alpha's log nothing of beta's
    answer = env.connect(ALPHA, body(WS_ALPHA.upper()))
    assert answer.status_code == 202, answer.get_json()
    assert answer.get_json()["workspace_id"] == WS_ALPHA
    env.drain()
    assert route(env, WS_ALPHA)["status"] == "queued"
    [task] = [t for t in env.transport.tasks.values() if b'"notion.reembed"' in t.body]
    assert json.loads(task.body)["org_id"] == ALPHA
    assert len(sources(env, ALPHA)) == len(PAGES) + 1
    assert sources(env, BETA) == {} and env.audit(ALPHA) == []


def test_a_workspace_another_org_proved_first_is_refused_without_naming_it(env: Env) -> None:
    """Both orgs hold a genuine token of one workspace (two integrations installed in it):
    the first to connect it keeps it; the second is refused, and told nothing of the first."""
    env.notion.add_token("secret_alpha_second_integration", WS_ALPHA)
    assert env.connect(ALPHA, body()).status_code == 202
    alpha_rows = env.rows(ALPHA, "SELECT workspace_id, secret_name, domains FROM notion_workspaces")
    tasks = dict(env.transport.tasks)
    taken = env.connect(BETA, body(token="secret_alpha_second_integration"))
    assert taken.status_code == 403, taken.get_json()
    error = taken.get_json()["error"]
    assert error["code"] == "owned_by_another_org" and ALPHA not in taken.get_data(as_text=True)
    assert env.rows(BETA, "SELECT * FROM notion_workspaces") == []
    assert env.rows(BETA, "SELECT * FROM notion_syncs") == []
    assert env.secrets.latest(notion_workspaces.secret_name(BETA, WS_ALPHA)) is None
    assert env.secrets.latest(notion_workspaces.secret_name(ALPHA, WS_ALPHA)) == TOKEN_ALPHA
    assert env.rows(ALPHA, "SELECT workspace_id, secret_name, domains FROM notion_workspaces") == (
        alpha_rows
    )
    assert env.transport.tasks == tasks  # no backfill for beta
    [entry] = env.audit(BETA)
    assert (entry["reason"], entry["action"], entry["detail"]["workspace_id"]) == (
        "owned_by_another_org",
        "notion.connect",
        WS_ALPHA,
    )
    assert ALPHA not in json.dumps(entry["detail"]) and env.audit(ALPHA) == []
    # alpha reconnecting its own workspace (a new token of it) is still alpha's to do
    again = env.connect(ALPHA, body(token="secret_alpha_second_integration"))
    assert again.status_code == 202, again.get_json()
    assert env.secrets.latest(notion_workspaces.secret_name(ALPHA, WS_ALPHA)) == (
        "secret_alpha_second_integration"
    )


def test_an_unknown_org_is_a_404_before_notion_is_asked(env: Env) -> None:
    answer = env.connect("org_nobody", body())
    assert answer.status_code == 404, answer.get_json()
    assert env.notion.requests == [] and env.secrets.values == {}


# -- the daily re-proof (issue 31: workspaces connected before connect proved them)


def legacy_squat(env: Env, org: str, token: str | None) -> str:
    """What connect stored before it proved anything: ``org``'s claim on alpha's workspace
    with alpha's product database mapped, a backfill run, and ``token`` in Secret Manager
    (None: no token stored); its secret's name."""
    name = notion_workspaces.secret_name(org, WS_ALPHA)
    if token is not None:
        secret_store(env.deps.settings).put(name, token)
    with env.deps.db.transaction(org) as cur:
        cur.execute(
            "INSERT INTO notion_workspaces (workspace_id, org_id, secret_name, domains)"
            " VALUES (%s, %s, %s, %s::jsonb)",
            (WS_ALPHA, org, name, json.dumps({DB_PRODUCT: "KC-01"})),
        )
        cur.execute(
            "INSERT INTO notion_syncs (id, org_id, workspace_id, kind, targets)"
            " VALUES ('bf-legacy', %s, %s, 'backfill', %s::jsonb)",
            (org, WS_ALPHA, json.dumps([DB_PRODUCT])),
        )
    return name


def notify(env: Env, workspace: str, page: str = PAGES[0]) -> tuple[int, list[str]]:
    """Notion's event for an edit of ``page`` in ``workspace``'s product database, posted to
    the notion-webhook function: its status, and the orgs of the re-embed tasks it queued."""
    before = set(env.transport.tasks)
    event = webhook_event(page, parent_database=DB_PRODUCT, workspace_id=workspace)
    answer = env.hook.post("/", data=event, headers=signed_headers(SIGNING, event))
    queued = [env.transport.tasks[n] for n in sorted(set(env.transport.tasks) - before)]
    return answer.status_code, [json.loads(t.body)["org_id"] for t in queued]


def reconcile_task(org: str) -> bytes:
    return json.dumps({"kind": "notion.reconcile", "org_id": org}).encode()


@pytest.mark.parametrize(
    "token",
    [TOKEN_BETA, "secret_made_up", None],
    ids=["another_workspaces_token", "a_token_notion_refuses", "no_token_stored"],
)
def test_a_squat_from_before_the_proof_is_released_by_the_days_reconciliation(
    env: Env, token: str | None
) -> None:
    """Beta claimed alpha's workspace when connect checked nothing: until the re-proof, alpha's
    events go to beta and alpha cannot connect; the day's reconciliation finds beta's token is
    not that workspace's and releases it, and alpha then connects it and gets its events."""
    name = legacy_squat(env, BETA, token)
    assert notify(env, WS_ALPHA) == (200, [BETA])  # the squat at work
    [squatted] = [n for n in env.transport.tasks if n not in env.delivered]
    refused = env.connect(ALPHA, body())
    assert refused.status_code == 403
    assert refused.get_json()["error"]["code"] == "owned_by_another_org"
    asked = len(env.notion.requests)

    answer = env.post_task(reconcile_task(BETA))
    assert answer == {"org_id": BETA, "started": [], "released": [WS_ALPHA]}
    # only the bot user was asked, with the stored token; nothing of alpha's was read
    proof = env.notion.requests[asked:]
    assert [r.route for r in proof] == ([] if token is None else ["notion.users.me"])
    assert {r.header("authorization") for r in proof} <= {f"Bearer {token}"}
    assert env.rows(BETA, "SELECT * FROM notion_workspaces") == []
    assert env.rows(BETA, "SELECT * FROM notion_syncs") == []  # its runs went with it
    assert name not in env.secrets.values  # the token deleted
    assert [
        (e["event"], e["actor"], e["channel"], e["action"], e["reason"]) for e in env.audit(BETA)
    ] == [("refusal", "system", "system", "notion.reprove", "ownership_unproven")]
    assert env.audit(BETA)[0]["detail"]["workspace_id"] == WS_ALPHA
    assert token is None or token not in json.dumps(env.audit(BETA))
    # alpha's events now go to no org; the squat's re-embed still queued is refused unread
    assert notify(env, WS_ALPHA) == (403, [])
    env.delivered.add(squatted)
    late = env.worker.post("/", json=json.loads(env.transport.tasks[squatted].body))
    assert late.status_code == 403 and len(env.notion.requests) == asked + len(proof)
    assert env.post_task(reconcile_task(BETA)) == {"org_id": BETA, "started": [], "released": []}

    # alpha connects its workspace: backfilled, and its events are alpha's
    answer = env.connect(ALPHA, body())
    assert answer.status_code == 202, answer.get_json()
    env.drain()
    assert len(sources(env, ALPHA)) == len(PAGES) + 1 and sources(env, BETA) == {}
    # (another page: the clock stands still, and page 0's task of this window is named)
    assert notify(env, WS_ALPHA, PAGES[1]) == (200, [ALPHA])
    assert [e["reason"] for e in env.audit(ALPHA)] == ["owned_by_another_org"]  # before
    assert len(env.audit(BETA)) == 1


def test_a_notion_failure_during_the_re_proof_releases_nothing(env: Env) -> None:
    """A 503 proves nothing either way: the squat stays for now, the org's proven workspace
    is reconciled all the same, and the task fails so that it is retried; the retry, with
    Notion back, releases the squat."""
    beta = body(WS_BETA, TOKEN_BETA, **{DB_BETA: "KC-03"})
    assert env.connect(BETA, beta).status_code == 202
    env.drain()
    name = legacy_squat(env, BETA, TOKEN_BETA)
    held = "SELECT workspace_id, status FROM notion_workspaces ORDER BY workspace_id"
    both = env.rows(BETA, held)
    reconciling = "SELECT workspace_id FROM notion_syncs WHERE kind = 'reconcile'"

    env.notion.fail(503)  # the next request: the squat's re-proof (ws-alpha is proven first)
    failed = env.worker.post("/", data=reconcile_task(BETA), content_type="application/json")
    assert failed.status_code == 503 and env.notion.pending == 0
    assert (
        env.rows(BETA, held)
        == both
        == [
            {"workspace_id": WS_ALPHA, "status": "connected"},
            {"workspace_id": WS_BETA, "status": "connected"},
        ]
    )
    assert env.secrets.latest(name) == TOKEN_BETA and env.audit(BETA) == []
    assert env.rows(BETA, reconciling) == [{"workspace_id": WS_BETA}]  # its run started
    assert notify(env, WS_ALPHA) == (200, [BETA])  # still routed: nothing was decided
    env.drain()  # (that re-embed reads alpha's page with beta's token: not found, nothing kept)
    assert sources(env, BETA) == {}

    retried = env.post_task(reconcile_task(BETA))
    assert retried["released"] == [WS_ALPHA] and len(retried["started"]) == 1
    env.drain()
    assert env.rows(BETA, held) == [{"workspace_id": WS_BETA, "status": "connected"}]
    assert env.secrets.latest(notion_workspaces.secret_name(BETA, WS_BETA)) == TOKEN_BETA
    [run] = env.rows(BETA, "SELECT status FROM notion_syncs WHERE kind = 'reconcile'")
    assert run["status"] == "done"
    assert [e["action"] for e in env.audit(BETA)] == ["notion.reprove"]


def test_the_webhook_routes_no_event_of_a_workspace_not_connected(env: Env) -> None:
    assert env.connect(ALPHA, body()).status_code == 202
    env.drain()
    assert notify(env, WS_ALPHA) == (200, [ALPHA])
    with env.deps.db.transaction(ALPHA) as cur:
        cur.execute("UPDATE notion_workspaces SET status = 'disconnected'")
    assert notify(env, WS_ALPHA) == (403, [])
    assert env.post_task(reconcile_task(ALPHA)) == {"org_id": ALPHA, "started": [], "released": []}
