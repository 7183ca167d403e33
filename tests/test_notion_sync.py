"""Flow 4: Notion webhook → Cloud Tasks → re-embed worker → KC-01..07.

Real parts: embedded PostgreSQL, a local server speaking the Notion API's REST shapes, the
Cloud Tasks emulator (end to end), functions-framework servers. The embedder is the offline
one wrapped to count calls (``CountingEmbedder``), so tests can prove what was re-embedded.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from colony.adapters.notion import HttpNotion
from colony.adapters.rest import RestClient
from colony.contracts.reembed import NotionReembed
from colony.errors import DatabaseError, OrgScopeError, Unauthorized
from colony.flows.knowledge import notion_reembed, notion_webhook
from colony.knowledge import KnowledgeStore
from colony.knowledge.store import ChunkIn
from colony.llm.agent_call import llm_from_settings
from colony.settings import Settings
from colony.store import fetch_all
from colony.store.db import fetch_value
from colony.store.knowledge import notion_workspaces
from colony.testing.fakes import CountingEmbedder, RecordingSleep
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.notion_server import NotionServer, block, signed_headers, webhook_event
from colony.webhooks import sign
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("ENT-007", "fn:notion-webhook", "fn:reembed")

ORG = "org_zoomprop_demo"
SECRET = "notion-signing-secret"
DB_KC01 = "a" * 32  # a Notion database mapped to KC-01
DB_KC04 = "b" * 32  # one mapped to KC-04
DB_UNMAPPED = "c" * 32  # a database no KC domain is configured for
WORKSPACE = "ws-demo"  # what webhook_event names by default
DOMAINS = {DB_KC01: "KC-01", DB_KC04: "KC-04", "2" * 32: "KC-04"}
PAGE = "1" * 32
OTHER_PAGE = "2" * 32
PARAGRAPHS = [
    f"Paragraph {n} about ZoomProp utilization dashboards and lease data." * 12 for n in range(6)
]


def page_blocks(paragraphs: list[str]) -> list[dict]:
    blocks = [block("heading_1", "Product overview")]
    for text in paragraphs:
        blocks += [block("paragraph", text), block("image", external={"url": "https://x/y.png"})]
    blocks.append(block("embed", url="https://example.com"))
    blocks.append(block("unsupported"))
    return blocks


@pytest.fixture
def env(testdb: PgDB):
    db = testdb.app()
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'ZoomProp')", (ORG,))
        notion_workspaces.connect(cur, ORG, WORKSPACE, "colony-notion-test", DOMAINS)
    embedder = CountingEmbedder()
    knowledge = KnowledgeStore(db, embedder)
    with NotionServer() as server:
        settings = Settings.from_env(
            {
                "COLONY_NOTION_SIGNING_SECRET": SECRET,
                "COLONY_NOTION_BASE_URL": server.url,
            }
        )
        deps = local_deps(settings, db, InlineTransport(), llm_from_settings(settings), knowledge)
        sleep = RecordingSleep()
        client = HttpNotion(
            RestClient(
                "Notion",
                server.url,
                lambda: "secret_int",
                headers={"Notion-Version": "2022-06-28"},
                sleep=sleep,
            )
        )
        try:
            yield deps, server, (lambda ws: client), embedder, sleep
        finally:
            client.close()


def chunks(deps, source_id: str = PAGE):
    with deps.db.transaction(ORG) as cur:
        return fetch_all(
            cur,
            "SELECT domain, chunk_index, content, title FROM kc_chunks"
            " WHERE source = 'notion' AND source_id = %s ORDER BY chunk_index",
            (source_id,),
        )


def job(page: str = PAGE, domain: str = "KC-01") -> NotionReembed:
    return NotionReembed(
        org_id=ORG,
        workspace_id=WORKSPACE,
        page_id=page,
        domain=domain,  # type: ignore[arg-type]
        edited_time="t1",
    )


def test_webhook_verifies_signature_dedupes_and_names_tasks_by_page_and_edit(
    env, testdb: PgDB
) -> None:
    deps, *_ = env
    body = webhook_event(PAGE, parent_database=DB_KC01, event_id="evt-1")
    with pytest.raises(Unauthorized):
        notion_webhook.receive(deps, body, None)
    with pytest.raises(Unauthorized):
        notion_webhook.receive(deps, body, sign("wrong-secret", body))
    with pytest.raises(Unauthorized):  # a valid signature of a different body
        notion_webhook.receive(deps, body + b" ", sign(SECRET, body))
    assert deps.transport.tasks == {}

    first = notion_webhook.receive(deps, body, sign(SECRET, body))
    assert first == {"status": "queued", "page_id": PAGE, "domain": "KC-01"}
    assert notion_webhook.receive(deps, body, sign(SECRET, body)) == {"status": "duplicate"}
    # A burst: another event for the same page in the same window names the same task.
    burst = webhook_event(PAGE, parent_database=DB_KC01, event_id="evt-2")
    notion_webhook.receive(deps, burst, sign(SECRET, burst))
    assert len(deps.transport.tasks) == 1
    [task] = deps.transport.tasks.values()
    assert task.queue == "colony-notion-reembed" and task.target == "reembed"
    assert NotionReembed.model_validate_json(task.body).domain == "KC-01"
    # Unmapped pages and non-page events are acknowledged and ignored.
    stray = webhook_event("3" * 32, event_id="evt-3")
    assert notion_webhook.receive(deps, stray, sign(SECRET, stray))["status"] == "ignored"
    comment = json.dumps(
        {"id": "evt-4", "type": "comment.created", "entity": {"id": "x", "type": "comment"}}
    ).encode()
    assert notion_webhook.receive(deps, comment, sign(SECRET, comment))["status"] == "ignored"
    assert len(deps.transport.tasks) == 1

    # The verification handshake is unsigned; its token is kept for the operator.
    handshake = json.dumps({"verification_token": "secret_verify_123"}).encode()
    assert notion_webhook.receive(deps, handshake, None) == {"status": "verification_received"}
    owner = testdb.owner_connection()
    try:
        stored = fetch_all(owner.cursor(), "SELECT verification_token FROM notion_verifications")
    finally:
        owner.close()
    assert stored == [{"verification_token": "secret_verify_123"}]
    # The token becomes a signing secret: the application role may write it, never read it.
    with pytest.raises(DatabaseError, match="42501"), deps.db.transaction(None) as cur:
        cur.execute("SELECT verification_token FROM notion_verifications")


def test_a_burst_of_edits_is_one_task_that_runs_after_every_edit_of_its_window(env) -> None:
    """Each edit has its own Notion timestamp; the events received within one window must
    name one task, scheduled to run only after the window (and so every edit whose event
    arrived in it) has passed; an event received after the window is a new task."""
    deps, *_ = env
    start = datetime(2026, 11, 30, 9, 0, 1, tzinfo=UTC)  # the window is [09:00:00, 09:00:05)
    now = [start]
    deps = replace(deps, clock=lambda: now[0])

    def edit(n: int, received_after: float) -> None:
        now[0] = start + timedelta(seconds=received_after)
        body = webhook_event(
            PAGE,
            parent_database=DB_KC01,
            event_id=f"edit-{n}",
            timestamp=f"2026-11-30T09:00:0{n}.{n}00Z",
        )
        assert notion_webhook.receive(deps, body, sign(SECRET, body))["status"] == "queued"

    for n, received_after in enumerate((0.0, 1.5, 3.9)):
        edit(n, received_after)
    [task] = deps.transport.tasks.values()
    runs_at = start + timedelta(seconds=task.delay_seconds)  # scheduled at the first event
    assert runs_at == datetime(2026, 11, 30, 9, 0, 6, tzinfo=UTC) > now[0]
    edit(3, 4.2)  # received at 09:00:05.2: the next window, a new task after it
    assert len(deps.transport.tasks) == 2
    later = deps.transport.tasks[max(deps.transport.tasks)]
    assert now[0] + timedelta(seconds=later.delay_seconds) == datetime(
        2026, 11, 30, 9, 0, 11, tzinfo=UTC
    )


@pytest.mark.covers("KC-01")
def test_reembed_only_changed_chunks_skips_unsupported_blocks_and_removes_deleted(env) -> None:
    deps, server, client, embedder, sleep = env
    server.put_page(PAGE, "Product overview", page_blocks(PARAGRAPHS), parent_database=DB_KC01)
    server.rate_limit(times=1, retry_after=2)
    first = notion_reembed.reembed(deps, job(), client)
    assert sleep.delays == [2.0]  # 429 Retry-After honoured, then the call succeeded
    assert first["unsupported_blocks"] == {"image": 6, "embed": 1, "unsupported": 1}
    stored = chunks(deps)
    assert len(stored) == first["chunks"] >= 3 and {c["domain"] for c in stored} == {"KC-01"}
    assert all("https://" not in c["content"] for c in stored)
    assert len(embedder.calls) == 1  # one batched embedding call for the whole page

    calls = len(embedder.calls)
    again = notion_reembed.reembed(deps, job(), client)
    assert again["embedded"] == 0 and len(embedder.calls) == calls  # unchanged: no embedding

    edited = list(PARAGRAPHS)
    edited[4] = edited[4].replace("lease data", "lease abstracts")
    server.put_page(PAGE, "Product overview", page_blocks(edited), parent_database=DB_KC01)
    changed = notion_reembed.reembed(deps, job(), client)
    assert changed["embedded"] == 1 and embedder.calls[-1] == [
        c["content"] for c in chunks(deps) if "lease abstracts" in c["content"]
    ]

    server.delete_page(PAGE)
    assert notion_reembed.reembed(deps, job(), client)["removed"] == len(stored)
    assert chunks(deps) == []


def structured_page(texts: dict[str, list[str]]) -> list[dict]:
    """A page in sections: headings, short paragraphs, a long paragraph (past the chunk
    budget), a bulleted list and a to-do list, with images between."""
    out = [block("heading_1", "Objection handling")]
    for key, sentences in texts.items():
        kind, _, _ = key.partition(":")
        if kind == "heading_2":
            out.append(block("heading_2", sentences[0]))
        else:
            out += [block(kind, " ".join(sentences)), block("image", external={"url": "x"})]
    return out


def sentence(n: int, topic: str) -> str:
    return f"Sentence {n} answers the {topic} objection for clinic {n * 7} with lease data."


def test_an_edit_re_embeds_the_chunk_of_the_block_it_touches_and_no_other(env) -> None:
    """Chunks follow the page's blocks: each edit below (a sentence rewritten, a list item
    added, a sentence deleted from a block long enough to be split, a paragraph inserted)
    re-embeds only its own block's chunk; the chunks of every other block keep their rows'
    vectors, even those moved down the page."""
    deps, server, client, embedder, _ = env
    texts = {
        "heading_2:price": ["Price"],
        "paragraph:price": [sentence(n, "price") for n in range(4)],
        "heading_2:epic": ["Epic"],
        "paragraph:epic": [sentence(n, "Epic") for n in range(30)],  # ~390 words: split
        "bulleted_list_item:a": [sentence(1, "security")],
        "bulleted_list_item:b": [sentence(2, "security")],
        "heading_2:next": ["Next steps"],
        "to_do:call": ["Book the SE call."],
        "paragraph:close": [sentence(n, "timing") for n in range(3)],
    }

    def sync(expect_embedded: int | None = None) -> list[dict]:
        server.put_page(PAGE, "Objections", structured_page(texts), parent_database=DB_KC01)
        before = chunks(deps)
        calls = len(embedder.calls)
        result = notion_reembed.reembed(deps, job(), client)
        if expect_embedded is not None:
            assert result["embedded"] == expect_embedded, result
        fresh = [t for batch in embedder.calls[calls:] for t in batch]
        after = chunks(deps)
        assert fresh == [
            c["content"] for c in after if c["content"] not in {b["content"] for b in before}
        ]
        return after

    stored = sync()
    contents = [c["content"] for c in stored]
    assert contents[0] == "# Objection handling\n## Price\n" + " ".join(texts["paragraph:price"])
    assert sum(c.startswith("## Epic\n") for c in contents) == 1
    epic = [c for c in contents if "the Epic objection" in c]
    assert len(epic) >= 3 and all(len(c.split()) <= 180 for c in contents)
    assert f"- {sentence(1, 'security')}\n- {sentence(2, 'security')}" in contents
    assert contents[-2:] == [
        "## Next steps\n- [ ] Book the SE call.",
        " ".join(texts["paragraph:close"]),
    ]
    calls = len(embedder.calls)
    assert sync(0) and len(embedder.calls) == calls  # unchanged: no embedding call at all

    texts["paragraph:price"][2] = sentence(2, "price").replace("lease data", "badge data")
    after = sync(1)
    assert [c["content"] for c in after if "badge data" in c["content"]] == [after[0]["content"]]

    texts = {**texts, "bulleted_list_item:c": [sentence(3, "security")]}
    order = list(texts)
    order.insert(order.index("bulleted_list_item:b") + 1, order.pop())
    texts = {key: texts[key] for key in order}
    after = sync(1)
    assert any(c["content"].endswith(f"- {sentence(3, 'security')}") for c in after)

    del texts["paragraph:epic"][12]
    before = chunks(deps)
    after = sync()
    assert 1 <= len({c["content"] for c in after} - {c["content"] for c in before}) <= 2
    untouched = [c["content"] for c in before if "the Epic objection" not in c["content"]]
    assert untouched == [c["content"] for c in after if "the Epic objection" not in c["content"]]

    inserted = {"paragraph:new": ["A new paragraph on pilots, above the Epic section."]}
    keys = list(texts)
    at = keys.index("heading_2:epic")
    texts = {**{k: texts[k] for k in keys[:at]}, **inserted, **{k: texts[k] for k in keys[at:]}}
    before = chunks(deps)
    after = sync(1)
    assert len(after) == len(before) + 1
    assert [c["content"] for c in after if "pilots" not in c["content"]] == [
        c["content"] for c in before
    ]


def queued_job(deps, body: bytes) -> NotionReembed:
    """What the webhook queued for ``body`` (the only task it may have added)."""
    before = set(deps.transport.tasks)
    reply = notion_webhook.receive(deps, body, sign(SECRET, body))
    assert reply["status"] == "queued", reply
    [name] = set(deps.transport.tasks) - before
    return NotionReembed.model_validate_json(deps.transport.tasks[name].body)


def test_a_page_moved_out_of_every_mapped_database_loses_its_chunks(env) -> None:
    """Notion's event for the move names the new parent, which nothing maps: the webhook
    must still queue the page (the KC holds its chunks) and the worker, mapping the page by
    its current parent, must delete them; stale jobs naming the old domain change nothing."""
    deps, server, client, embedder, _ = env
    server.put_page(PAGE, "Product overview", page_blocks(PARAGRAPHS[:2]), parent_database=DB_KC01)
    notion_reembed.reembed(deps, job(), client)
    stored = len(chunks(deps))
    assert stored > 0

    server.put_page(
        PAGE, "Product overview", page_blocks(PARAGRAPHS[:2]), parent_database=DB_UNMAPPED
    )
    moved = webhook_event(PAGE, kind="page.moved", parent_database=DB_UNMAPPED, event_id="mv")
    task = queued_job(deps, moved)
    assert task.domain is None
    result = notion_reembed.reembed(deps, task, client)
    assert result == {"page_id": PAGE, "removed": stored, "reason": "unmapped"}
    assert chunks(deps) == []
    stale = notion_reembed.reembed(deps, job(domain="KC-01"), client)
    assert stale["removed"] == 0 and chunks(deps) == [] and len(embedder.calls) == 1
    # With nothing left in the KC, events for the unmapped page are ignored again.
    edit = webhook_event(PAGE, parent_database=DB_UNMAPPED, event_id="edit")
    assert notion_webhook.receive(deps, edit, sign(SECRET, edit))["status"] == "ignored"


@pytest.mark.covers("KC-01", "KC-04")
def test_a_page_moved_to_another_mapped_database_changes_domain_without_re_embedding(
    env,
) -> None:
    deps, server, client, embedder, _ = env
    server.put_page(PAGE, "Product overview", page_blocks(PARAGRAPHS[:3]), parent_database=DB_KC01)
    notion_reembed.reembed(deps, job(), client)
    before, calls = chunks(deps), len(embedder.calls)
    assert {c["domain"] for c in before} == {"KC-01"}

    server.put_page(PAGE, "Product overview", page_blocks(PARAGRAPHS[:3]), parent_database=DB_KC04)
    moved = webhook_event(PAGE, kind="page.moved", parent_database=DB_KC04, event_id="mv")
    assert queued_job(deps, moved).domain == "KC-04"
    # Even a stale job from before the move (naming KC-01) syncs into the current domain.
    result = notion_reembed.reembed(deps, job(domain="KC-01"), client)
    assert result["domain"] == "KC-04" and result["embedded"] == 0
    after = chunks(deps)
    assert {c["domain"] for c in after} == {"KC-04"}
    assert [c["content"] for c in after] == [c["content"] for c in before]
    assert len(embedder.calls) == calls  # moved, not re-embedded


def test_a_reembed_job_for_another_org_is_refused(env) -> None:
    """The workspace is connected to ORG; a task naming another org (locally no OIDC guards
    the worker) must not write the workspace's pages into that org."""
    deps, server, client, embedder, _ = env
    server.put_page(PAGE, "Product overview", page_blocks(PARAGRAPHS[:2]))
    other = NotionReembed(
        org_id="org_other",
        workspace_id=WORKSPACE,
        page_id=PAGE,
        domain="KC-01",
        edited_time="t1",
    )
    with pytest.raises(OrgScopeError):
        notion_reembed.reembed(deps, other, client)
    assert embedder.calls == [] and server.requests_to("notion.pages.retrieve") == []


def test_nested_and_paginated_blocks_are_read(env) -> None:
    deps, server, client, *_ = env
    toggle = block("toggle", "Objection: we already have a tool", children=True)
    server.put_page(
        OTHER_PAGE,
        "Objections",
        [toggle]
        + [
            block("bulleted_list_item", f"Point {n} on integrations with Epic.") for n in range(130)
        ],
    )
    server.set_children(toggle["id"], [block("paragraph", "Answer: we ingest its exports.")])
    result = notion_reembed.reembed(deps, job(OTHER_PAGE, "KC-04"), client)
    text = " ".join(c["content"] for c in chunks(deps, OTHER_PAGE))
    assert "Answer: we ingest its exports." in text and "Point 129 on" in text
    assert result["unsupported_blocks"] == {}
    cursors = [r.query.get("start_cursor") for r in server.requests_to("notion.blocks.children")]
    assert cursors.count(None) == 2 and len(cursors) == 3  # page 1, the toggle, page 2


def test_a_failed_sync_leaves_the_page_as_it_was(env) -> None:
    deps, server, client, embedder, _ = env
    server.put_page(PAGE, "Product overview", page_blocks(PARAGRAPHS), parent_database=DB_KC01)
    notion_reembed.reembed(deps, job(), client)
    before = chunks(deps)
    assert before
    edited = page_blocks([p + " New." for p in PARAGRAPHS[:3]])
    server.put_page(PAGE, "Product overview", edited, parent_database=DB_KC01)

    def broken(texts):
        raise RuntimeError("embedding provider fell over")

    embedder.embed = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        notion_reembed.reembed(deps, job(), client)
    assert chunks(deps) == before  # never a partial KC update


def test_a_page_that_cannot_be_stored_is_a_recorded_failure_not_a_retry_loop(
    env, testdb: PgDB
) -> None:
    """Cloud Tasks retries every non-2xx answer, so content that can never be stored (here a
    code block holding one 25k-character token, past the store's chunk limit) must end as a
    recorded failure the worker acknowledges, with the page's chunks left as they were."""
    deps, server, client, embedder, _ = env
    server.put_page(PAGE, "Product overview", page_blocks(PARAGRAPHS[:2]), parent_database=DB_KC01)
    notion_reembed.reembed(deps, job(), client)
    before, calls = chunks(deps), len(embedder.calls)
    assert before
    blob = block("code", "x" * 25_000, language="json")
    blocks = [*page_blocks(PARAGRAPHS[:2]), blob]
    server.put_page(PAGE, "Product overview", blocks, parent_database=DB_KC01)
    result = notion_reembed.reembed(deps, job(), client)
    assert result["status"] == "failed" and "limit" in result["error"]
    assert chunks(deps) == before and len(embedder.calls) == calls
    owner = testdb.owner_connection()
    try:
        recorded = fetch_all(
            owner.cursor(), "SELECT function, event_id, claimed_org_id FROM rejected_deliveries"
        )
    finally:
        owner.close()
    assert recorded == [{"function": "reembed", "event_id": f"{PAGE}@t1", "claimed_org_id": ORG}]


class GatedEmbedder(CountingEmbedder):
    """Holds its first call until ``release`` is set (after saying so with ``entered``), so
    a test can hold one sync's transaction open while another sync of the page starts."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def embed(self, texts):
        self.entered.set()
        assert self.release.wait(30), "the test never released the embedder"
        return super().embed(texts)


def test_concurrent_syncs_of_one_page_end_as_one_whole_version(env, testdb: PgDB) -> None:
    """Two re-embed tasks for one page may run at once (one per edit time). Each computes
    what changed from what it read; unless the second waits for the first to commit, the
    page ends as a mix of both versions (a partial KC update)."""
    from tests.conftest import wait_for

    deps, *_ = env
    v0 = [f"Version zero, paragraph {n}. " * 20 for n in range(3)]
    v1 = [v0[0].replace("zero", "one"), v0[1], v0[2]]  # edits paragraph 0
    v2 = [v0[0], v0[1].replace("zero", "two"), v0[2]]  # a later edit: paragraph 1
    deps.knowledge.sync_source(ORG, "notion", PAGE, [ChunkIn("KC-01", t) for t in v0])
    gated = GatedEmbedder()
    slow = KnowledgeStore(deps.db, gated)
    errors: list[BaseException] = []

    def sync(store: KnowledgeStore, texts: list[str]) -> None:
        try:
            store.sync_source(ORG, "notion", PAGE, [ChunkIn("KC-01", t) for t in texts])
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    first = threading.Thread(target=sync, args=(slow, v1))
    first.start()
    assert gated.entered.wait(30)  # the first sync is inside its transaction, embedding
    second = threading.Thread(target=sync, args=(deps.knowledge, v2))
    second.start()
    owner = testdb.owner_connection()
    try:
        waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted"
        wait_for(
            lambda: not second.is_alive() or fetch_value(owner.cursor(), waiting) > 0,
            timeout=30,
            what="the second sync to finish or to wait for the first",
        )
    finally:
        owner.close()
    gated.release.set()
    first.join(30)
    second.join(30)
    assert not errors and not first.is_alive() and not second.is_alive()
    assert [c["content"] for c in chunks(deps)] == v2  # the later sync, whole


def test_notion_webhook_to_cloud_tasks_to_reembed_over_real_functions(
    testdb: PgDB, tmp_path: Path
) -> None:
    import grpc
    from google.cloud import tasks_v2
    from google.cloud.tasks_v2.services.cloud_tasks.transports import CloudTasksGrpcTransport

    from colony.adapters.secrets import FileSecrets
    from colony.adapters.transport_checks import queue_path
    from colony.local.functions import FunctionServers
    from colony.testing import emulators
    from colony.testing.tasks_gateway import TasksGateway
    from tests.conftest import APP_ROLE, wait_for

    db = testdb.app()
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'ZoomProp')", (ORG,))
        notion_workspaces.connect(cur, ORG, WORKSPACE, "colony-notion-e2e", {DB_KC01: "KC-01"})
    FileSecrets(tmp_path / "secrets").put("colony-notion-e2e", "secret_int")
    try:
        tasks = emulators.tasks_emulator(max_retries=3)
        host = tasks.__enter__()
    except emulators.EmulatorUnavailable as missing:
        pytest.skip(f"Cloud Tasks emulator NOT run: {missing}; the flow tests above cover it")
    try:
        admin = tasks_v2.CloudTasksClient(
            transport=CloudTasksGrpcTransport(channel=grpc.insecure_channel(host))
        )
        admin.create_queue(
            parent="projects/colony-local/locations/us-central1",
            queue={"name": queue_path("colony-local", "us-central1", "colony-notion-reembed")},
        )
        admin.transport.close()
        with NotionServer() as notion, TasksGateway(host) as gateway:
            notion.put_page(
                PAGE, "Positioning", page_blocks(PARAGRAPHS[:2]), parent_database=DB_KC01
            )
            env = {
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
                "COLONY_TRANSPORT": "gcp",
                "COLONY_TASKS_ENDPOINT": gateway.base_url,
                "COLONY_DATA_DIR": str(tmp_path),
                "COLONY_NOTION_SIGNING_SECRET": SECRET,
                "COLONY_NOTION_BASE_URL": notion.url,
            }
            names = ["notion-webhook", "reembed"]
            with FunctionServers(env, names, log_dir=tmp_path) as servers, httpx.Client() as http:
                url = servers.urls["notion-webhook"]
                body = webhook_event(PAGE, parent_database=DB_KC01, event_id="evt-e2e")
                unsigned = http.post(
                    url, content=body, headers={"Content-Type": "application/json"}
                )
                assert unsigned.status_code == 401
                assert unsigned.json()["error"]["code"] == "unauthorized"
                forged = http.post(url, content=body, headers=signed_headers("nope", body))
                assert forged.status_code == 401
                # A genuine event from a workspace no org connected: refused, not routed.
                stranger = webhook_event(
                    PAGE, parent_database=DB_KC01, event_id="evt-x", workspace_id="ws-other"
                )
                refused = http.post(url, content=stranger, headers=signed_headers(SECRET, stranger))
                assert refused.status_code == 403
                assert "not connected" in refused.json()["error"]["message"]
                reply = http.post(
                    url, content=body, headers=signed_headers(SECRET, body), timeout=30
                )
                assert reply.status_code == 200 and reply.json()["status"] == "queued"
                replay = http.post(url, content=body, headers=signed_headers(SECRET, body))
                assert replay.json() == {"status": "duplicate"}

                def stored():
                    with db.transaction(ORG) as cur:
                        return fetch_all(
                            cur, "SELECT content FROM kc_chunks WHERE domain = 'KC-01'"
                        )

                rows = wait_for(stored, what="the re-embed task to run")
                assert any("Paragraph 1" in r["content"] for r in rows)
                assert notion.requests_to("notion.pages.retrieve")
    finally:
        tasks.__exit__(None, None, None)
