"""AGT-001 chat end to end: real functions-framework servers over HTTP, the offline provider,
the embedded PostgreSQL. The chat, approval and campaign-chain functions each run as their own
process, so a continuation written by the approval function reaches the chat function's
stream through PostgreSQL's LISTEN/NOTIFY, as it would between Cloud Functions instances.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.chat_demo import SseEvent, answer_text, follow, post_turn, read_sse
from colony.local.db import connect_factory
from colony.local.demo import load_demo
from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database, ensure_app_role_grants, fetch_all
from colony.store import migrate as run_migrations
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.sentry_server import SentryServer
from tests.conftest import APP_ROLE, PgDB, _admin, wait_for

pytestmark = pytest.mark.covers("AGT-001", "ENT-008", "fn:chat", "TECH-007")

ORG = "org_zoomprop_demo"
OTHER = "org_other_chat"
FUNCTIONS = ["chat", "approval", "campaign", "enrichment", "qualification", "message-generator"]


class Stack:
    def __init__(
        self, servers: FunctionServers, deps: Deps, data_dir: Path, sentry: SentryServer
    ) -> None:
        self.servers, self.deps, self.data_dir = servers, deps, data_dir
        self.sentry = sentry  # where every function's Sentry events go (SENTRY_DSN)
        self.chat = servers.urls["chat"]
        self.token = mint_local_token(data_dir, ORG)
        self.other = mint_local_token(data_dir, OTHER)
        self.http = httpx.Client(timeout=60)

    def auth(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}

    def turn(
        self, message: str, session_id: str | None = None, *, stop_after: int | None = None
    ) -> tuple[str, list[SseEvent]]:
        """POST a turn as the org's user and read its events (``post_turn``)."""
        return post_turn(
            self.http, self.chat, self.token, message, session_id, stop_after=stop_after
        )

    def rows(self, sql: str, params: tuple = (), org: str = ORG) -> list[dict]:
        with self.deps.db.transaction(org) as cur:
            return fetch_all(cur, sql, params)


@pytest.fixture(scope="module")
def stack(pg_cluster: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    # Module-scoped: one database and one set of servers for every test here (start-up is
    # the slow part); each test works in its own chat session.
    name = f"chat_{uuid.uuid4().hex[:10]}"
    admin = _admin(pg_cluster)
    admin.cursor().execute(f"CREATE DATABASE {name}")
    pg = PgDB(name, pg_cluster, 1536)
    owner = pg.owner_connection()
    run_migrations(owner, dim=1536)
    ensure_app_role_grants(owner, APP_ROLE)
    owner.close()
    db = Database(connect_factory(pg.settings, "app"))
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    with db.transaction(OTHER) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Other')", (OTHER,))
    data_dir = tmp_path_factory.mktemp("chat")
    sentry = SentryServer().start()
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": pg.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(data_dir),
        "SENTRY_DSN": sentry.dsn,
        "SENTRY_RELEASE": "test",  # else the SDK runs git for one
    }
    try:
        with FunctionServers(env, FUNCTIONS, log_dir=data_dir) as servers:
            settings = Settings.from_env({})
            # the functions publish; this side only reads the database
            deps = local_deps(
                settings, db, InlineTransport(), llm_from_settings(settings, db), knowledge
            )
            s = Stack(servers, deps, data_dir, sentry)
            yield s
            s.http.close()
    finally:
        sentry.close()
        db.close()
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


def types(events: list[SseEvent]) -> list[str]:
    return [e.type for e in events]


def test_streamed_turn_hydrates_brief_and_traces_sections(stack: Stack) -> None:
    session, events = stack.turn("Good morning, what's new?")
    assert types(events)[0] == "accepted" and types(events)[-1] == "done"
    assert "delta" in types(events) and events[-1].data["status"] == "completed"
    ids = [e.id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert "No daily brief has been written today" in answer_text(events)

    today = datetime.now(UTC).date()
    with stack.deps.db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO daily_briefs (org_id, brief_date, content) VALUES (%s, %s, %s)"
            " ON CONFLICT (org_id, brief_date) DO NOTHING",
            (ORG, today, "Pipeline holds 7 open deals worth $1.2M. Queue is clear."),
        )
    _, events = stack.turn("And now?", session)
    assert "Pipeline holds 7 open deals" in answer_text(events)
    brief = stack.http.get(f"{stack.chat}/brief", headers=stack.auth()).json()["brief"]
    assert brief["content"].startswith("Pipeline holds 7")

    turns = stack.rows(
        "SELECT role, content FROM chat_turns WHERE session_id = %s ORDER BY id", (session,)
    )
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    calls = stack.rows(
        "SELECT context_budget_used AS b FROM llm_calls WHERE agent_id = 'AGT-001'"
        " ORDER BY id DESC LIMIT 1"
    )
    used = calls[0]["b"]
    assert set(used) == {"system", "kc", "entity", "history", "task"}
    assert 0 < used["history"] <= 2000 and used["kc"] > 0 and used["entity"] > 0


@pytest.mark.covers("AGT-002", "ENT-005", "fn:campaign")
def test_tool_call_dispatches_campaign_visible_to_campaign_function(stack: Stack) -> None:
    session, events = stack.turn("Launch a Signal campaign for T1 prospects P-001 and P-002")
    assert types(events) == ["accepted", "tool_call", "approval_required", "done"]
    assert events[1].data["name"] == "launch_campaign"
    card = events[2].data["approval"]
    assert events[-1].data == {**events[-1].data, "status": "paused", "approval_id": card["id"]}
    # The gate holds: nothing was written to ENT-005 before the approval.
    assert not stack.rows("SELECT id FROM campaigns WHERE name = 'Signal outreach, T1'")

    decided = stack.http.post(
        f"{stack.chat}/approvals",
        headers=stack.auth(),
        json={"item_id": card["id"], "action": "approve"},
    )
    assert decided.status_code == 200 and decided.json()["status"] == "applied"
    resumed = follow(stack.http, stack.chat, stack.token, session, events[-1].id)
    assert types(resumed)[0] == "accepted" and resumed[0].data["resumes"]
    result = next(e for e in resumed if e.type == "tool_result")
    assert result.data["ok"] and result.data["result"]["contacts"] == 2
    run_id = result.data["result"]["run_id"]
    assert run_id in answer_text(resumed) and resumed[-1].data["status"] == "completed"

    sql = "SELECT status, contacts_total, contacts_done FROM campaign_runs WHERE id = %s"
    run = wait_for(
        lambda: (r := stack.rows(sql, (run_id,))) and r[0]["status"] == "completed" and r[0],
        what="the run to complete",
    )
    assert run["contacts_done"] == run["contacts_total"] == 2
    handled = stack.rows("SELECT 1 FROM processed_events WHERE handler = 'campaign.start'")
    assert handled, "AGT-002 (the campaign function) processed the dispatched start"


def test_gated_tool_paused_then_resumed_by_approval_callback(stack: Stack) -> None:
    session, events = stack.turn("Launch an Insight campaign for T3 prospects P-005")
    card = next(e.data["approval"] for e in events if e.type == "approval_required")
    last = events[-1].id
    # A follower connected before the decision: the continuation must reach it live.
    received: list[SseEvent] = []
    connected = threading.Event()

    def listen() -> None:
        headers = {**stack.auth(), "Last-Event-ID": str(last)}
        url = f"{stack.chat}/sessions/{session}/events?until=done"
        with httpx.Client(timeout=60) as http, http.stream("GET", url, headers=headers) as r:
            lines = r.iter_lines()
            first = next(lines)  # the stream is open (the server sent retry:)
            assert first.startswith("retry:")
            connected.set()
            received.extend(read_sse(lines))

    follower = threading.Thread(target=listen)
    follower.start()
    assert connected.wait(30)
    approval_url = stack.servers.urls["approval"]
    body = {"item_id": card["id"], "action": "approve"}
    first = stack.http.post(approval_url, json=body, headers=stack.auth())
    assert first.status_code == 200 and first.json()["status"] == "applied"
    follower.join(60)
    assert not follower.is_alive()
    assert types(received)[0] == "accepted" and types(received)[-1] == "done"
    assert [e.data["name"] for e in received if e.type == "tool_result"] == ["launch_campaign"]
    assert "Launched campaign" in answer_text(received)

    again = stack.http.post(approval_url, json=body, headers=stack.auth())
    assert again.status_code == 200 and again.json()["changed"] is False
    results = stack.rows(
        "SELECT count(*) AS n FROM chat_events WHERE session_id = %s AND type = 'tool_result'",
        (session,),
    )
    assert results[0]["n"] == 1, "an approval retried does not run the tool twice"

    # Rejected: the tool never runs, and the next turn knows it was rejected.
    _, events = stack.turn("Launch a Pain campaign for T2 prospects P-006", session)
    card = next(e.data["approval"] for e in events if e.type == "approval_required")
    rejected = stack.http.post(
        approval_url, json={"item_id": card["id"], "action": "reject"}, headers=stack.auth()
    )
    assert rejected.json()["status"] == "rejected"
    assert not stack.rows("SELECT 1 FROM campaigns WHERE name = 'Pain outreach, T2'")


def test_reconnect_with_last_event_id_replays_what_was_missed(stack: Stack) -> None:
    session, first = stack.turn(
        "Search the knowledge core for Epic integration objections", stop_after=2
    )
    assert types(first) == ["accepted", "tool_call"]
    rest = follow(stack.http, stack.chat, stack.token, session, first[-1].id)
    assert rest[0].id == first[-1].id + 1, "nothing missed, nothing repeated"
    assert types(rest)[0] == "tool_result" and types(rest)[-1] == "done"
    everything = follow(stack.http, stack.chat, stack.token, session, 0)
    assert [e.id for e in everything] == [e.id for e in first + rest]
    assert [e.data for e in everything] == [e.data for e in first + rest]
    bad = stack.http.get(
        f"{stack.chat}/sessions/{session}/events", headers={**stack.auth(), "Last-Event-ID": "abc"}
    )
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "validation_failed"


def test_concurrent_turns_on_one_session_are_serialised(stack: Stack) -> None:
    session = stack.http.post(f"{stack.chat}/sessions", headers=stack.auth()).json()["session_id"]
    outcomes: dict[int, list[SseEvent]] = {}
    start = threading.Barrier(3)

    def turn(n: int) -> None:
        with httpx.Client(timeout=60) as http:
            start.wait()
            message = "What does our pipeline look like?" if n else "Hello there"
            _, events = post_turn(http, stack.chat, stack.token, message, session)
            outcomes[n] = events

    threads = [threading.Thread(target=turn, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == [0, 1, 2]
    assert all(
        o[-1].type == "done" and o[-1].data["status"] == "completed" for o in outcomes.values()
    )
    turns = stack.rows(
        "SELECT turn_id, role FROM chat_turns WHERE session_id = %s ORDER BY id", (session,)
    )
    order = [t["turn_id"] for t in turns]
    blocks = [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k]
    assert len(blocks) == 3 == len(set(blocks)), "each turn's rows are contiguous"
    assert sum(t["role"] == "user" for t in turns) == 3
    seqs = stack.rows(
        "SELECT seq, turn_id FROM chat_events WHERE session_id = %s ORDER BY seq", (session,)
    )
    assert [s["seq"] for s in seqs] == list(range(1, len(seqs) + 1))
    turn_order = [s["turn_id"] for s in seqs]
    assert len([k for i, k in enumerate(turn_order) if i == 0 or turn_order[i - 1] != k]) == 3


def test_cross_org_session_access_refused(stack: Stack) -> None:
    session, _ = stack.turn("Hello from org A")
    other = stack.auth(stack.other)
    for method, path, body in (
        ("GET", f"/sessions/{session}", None),
        ("GET", f"/sessions/{session}/events", None),
        ("POST", "/turns", {"session_id": session, "message": "let me in"}),
    ):
        response = stack.http.request(method, stack.chat + path, json=body, headers=other)
        assert response.status_code == 404, (path, response.text)
        assert response.json()["error"]["code"] == "not_found"
    assert len(stack.rows("SELECT 1 FROM chat_turns WHERE session_id = %s", (session,))) == 2
    assert not stack.rows("SELECT 1 FROM chat_sessions", org=OTHER)
    assert not stack.rows("SELECT 1 FROM chat_events", org=OTHER)

    # The approval route: another org can neither see nor decide this org's paused action.
    _, events = stack.turn("Launch a Referral campaign for T4 prospects P-003", session)
    item = next(e.data["approval"]["id"] for e in events if e.type == "approval_required")
    listed = stack.http.get(f"{stack.chat}/approvals", headers=other).json()["items"]
    assert item not in {i["id"] for i in listed}
    decided = stack.http.post(
        f"{stack.chat}/approvals", headers=other, json={"item_id": item, "action": "approve"}
    )
    assert decided.status_code == 404 and decided.json()["error"]["code"] == "not_found"
    assert stack.rows("SELECT status FROM approval_items WHERE id = %s", (item,)) == [
        {"status": "pending"}
    ]

    expired = mint_local_token(stack.data_dir, ORG, ttl=timedelta(seconds=-120))
    for headers in ({}, {"Authorization": "Bearer not.a.jwt"}, stack.auth(expired)):
        response = stack.http.post(f"{stack.chat}/turns", json={"message": "hi"}, headers=headers)
        assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"


def test_bad_input_gets_clear_errors_and_leaves_the_session_consistent(stack: Stack) -> None:
    session, _ = stack.turn("Hello")
    seen = len(stack.sentry.events())
    url = f"{stack.chat}/turns"

    def post(body=None, content=None) -> httpx.Response:
        headers = {**stack.auth(), "Content-Type": "application/json"}
        return stack.http.post(url, json=body, content=content, headers=headers)

    cases = [
        (post({"session_id": session, "message": ""}), 400, "empty_message"),
        (post({"session_id": session, "message": "   \n "}), 400, "empty_message"),
        (post({"session_id": session, "message": "word " * 300}), 400, "message_too_long"),
        (post({"session_id": session, "message": "x" * 5000}), 400, "validation_failed"),
        (post({"session_id": "no-such-session", "message": "hi"}), 404, "not_found"),
        (post(content=b'{"message": "hi"'), 400, "bad_json"),
        (post({"session_id": session, "message": "hi", "org_id": OTHER}), 400, "validation_failed"),
        (post({"session_id": session}), 400, "validation_failed"),
        (post({"session_id": session, "message": "hi\u0000there"}), 400, "validation_failed"),
    ]
    for response, status, code in cases:
        assert response.status_code == status, response.text
        assert response.json()["error"]["code"] == code
        assert "Traceback" not in response.text
    assert len(stack.rows("SELECT 1 FROM chat_turns WHERE session_id = %s", (session,))) == 2

    # The model calls a tool with arguments that break its schema (tier T9). The person's
    # message carries text that must never reach Sentry.
    planted = f"my card is 4111-{uuid.uuid4().hex}"
    _, events = stack.turn(f"Launch a Pain campaign for tier T9 please, {planted}", session)
    assert types(events)[:3] == ["accepted", "tool_call", "error"]
    assert events[2].data["error"]["code"] == "invalid_tool_arguments"
    assert "tier" in events[2].data["error"]["message"]
    assert events[-1].data["status"] == "completed"
    assert "could not run launch_campaign" in answer_text(events)
    assert not stack.rows(
        "SELECT 1 FROM approval_items WHERE kind = 'tool_action' AND payload->>'session_id' = %s",
        (session,),
    )
    rows = stack.rows(
        "SELECT role, tool_call FROM chat_turns WHERE session_id = %s ORDER BY id", (session,)
    )
    calls = [r["tool_call"]["id"] for r in rows if r["role"] == "assistant" and r["tool_call"]]
    results = [r["tool_call"]["id"] for r in rows if r["role"] == "tool"]
    assert calls == results and len(calls) == 1, "the failed call is paired with its error"
    # ... and the refused tool call reached Sentry from inside the turn, tagged (seed §8.2);
    # the caller's own mistakes above (HTTP 4xx) did not.
    (turn_id,) = {
        r["turn_id"]
        for r in stack.rows(
            "SELECT turn_id FROM chat_turns WHERE session_id = %s AND tool_call IS NOT NULL",
            (session,),
        )
    }

    def this_turn(server: SentryServer) -> list[dict]:
        found = server.of_category("tool_call_parse")
        return [e for e in found if e["tags"].get("run_id") == turn_id]

    stack.sentry.wait_for(lambda server: bool(this_turn(server)))
    (event,) = this_turn(stack.sentry)
    assert [e["event_id"] for e in stack.sentry.events()[seen:]] == [event["event_id"]]
    assert {k: event["tags"][k] for k in ("org_id", "run_id", "agent_id")} == {
        "org_id": ORG,
        "run_id": turn_id,
        "agent_id": "AGT-001",
    }
    assert event["fingerprint"] == ["colony", "tool_call_parse", "invalid_tool_arguments"]
    assert planted.encode() not in stack.sentry.raw()
    _, events = stack.turn("Show the approval queue", session)
    assert events[-1].data["status"] == "completed"
    unknown = stack.http.get(f"{stack.chat}/nowhere", headers=stack.auth())
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    page = stack.http.get(f"{stack.chat}/overview")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "http://" not in page.text and "https://" not in page.text
    script = stack.http.get(f"{stack.chat}/overview/views.js")  # the page's views, same origin
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "window.ColonyViews" in script.text
    assert stack.http.get(f"{stack.chat}/pipeline").status_code == 401
    mine = stack.http.get(f"{stack.chat}/pipeline", headers=stack.auth()).json()
    theirs = stack.http.get(f"{stack.chat}/pipeline", headers=stack.auth(stack.other)).json()
    assert mine["deals"] >= 6 and mine["stages"][0]["stage"] == "discovery"
    assert theirs == {"stages": [], "deals": 0, "value": 0}
    funnels = stack.http.get(f"{stack.chat}/campaigns", headers=stack.auth(stack.other)).json()
    assert funnels["campaigns"] == [] and funnels["stages"][0] == "contacts"
