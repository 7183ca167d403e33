"""``make run``'s knowledge step (issue 6): the demo transcript through the Drive webhook,
demo Notion pages through the Notion webhook, one KC candidate approved and retrieved.

Drive and Notion are local stand-ins speaking their REST shapes; the functions reach them
through the environment ``knowledge_env`` adds. Use::

    with knowledge_stand_ins(settings, org_id) as env:  # before the functions start
        with demo_functions(settings, org_id, app_dsn, say, extra_env=env) as (servers, token):
            run_knowledge_demo(DemoContext(settings, db, knowledge, org_id, servers, token, say))
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import httpx

from colony.local.demo import DEMO_DIR
from colony.local.progress import wait_until
from colony.settings import Settings
from colony.store import Database, fetch_all, fetch_one
from colony.webhooks import compact_id, folder_marker, watch_token

if TYPE_CHECKING:
    from colony.local.demo_context import DemoContext

FOLDER = "meetnotesdemo01"
TITLE = "Mercy Ridge Health <> ZoomProp | Discovery Call"
DRIVE_SECRET = "local-drive-channel-secret"  # local stand-ins only; production: Secret Manager
NOTION_SECRET = "local-notion-signing-secret"
NOTION_WORKSPACE = "ws-demo"
NOTION_TOKEN = "local-notion"  # the stand-in's integration token of NOTION_WORKSPACE


def notion_pages() -> dict[str, Any]:
    return dict(json.loads((DEMO_DIR / "notion" / "pages.json").read_text()))


@contextmanager
def knowledge_stand_ins(settings: Settings, org_id: str) -> Iterator[dict[str, str]]:
    """Start the Drive and Notion stand-ins with the demo content; yield the environment the
    functions need to use them."""
    from colony.local.customer_demo import seed_customer_pages, seed_workspace
    from colony.testing.drive_server import DriveServer
    from colony.testing.notion_server import NotionServer

    pages = notion_pages()
    with DriveServer() as drive, NotionServer() as notion:
        transcript = (DEMO_DIR / "transcripts" / "discovery_mercy_ridge.txt").read_bytes()
        drive.add_file(FOLDER, "demo-meet-notes-1", TITLE, transcript)
        # the org's proof that the folder is its own (``flows.recordings.drive_folders``)
        marker = folder_marker(DRIVE_SECRET, org_id, FOLDER)
        drive.add_file(FOLDER, "demo-marker", marker, b"", "text/plain")
        seed_workspace(notion, NOTION_WORKSPACE, NOTION_TOKEN, pages)
        seed_customer_pages(notion)  # the second org's workspace (``make run``'s new customer)
        yield {
            "COLONY_DRIVE_CHANNEL_TOKEN": DRIVE_SECRET,
            "COLONY_DRIVE_BASE_URL": drive.url,
            "COLONY_NOTION_SIGNING_SECRET": NOTION_SECRET,
            "COLONY_NOTION_BASE_URL": notion.url,
        }


def connect_demo_workspace(settings: Settings, db: Database, org_id: str) -> None:
    """Connect the stand-in's workspace (``webhook_event``'s default id) to the demo org, as
    the admin API's connect does, without its backfill: the demo posts edit events instead.
    Its token goes to the local secret store the functions read (``FileSecrets``)."""
    from colony.adapters.secrets import FileSecrets
    from colony.flows.knowledge.notion_workspaces import secret_name
    from colony.store.knowledge import notion_workspaces

    name = secret_name(org_id, NOTION_WORKSPACE)
    FileSecrets(settings.data_dir.resolve() / "secrets").put(name, NOTION_TOKEN)
    domains = {compact_id(k): v for k, v in notion_pages()["databases"].items()}
    with db.transaction(org_id) as cur:
        notion_workspaces.connect(cur, org_id, NOTION_WORKSPACE, name, domains)


def bind_demo_folder(db: Database, org_id: str) -> None:
    """The watch channel the demo's notification names, and the folder bound to the org, as
    ``flows.recordings.drive_channels.watch`` stores them once it has found the org's marker (the
    stand-in's Drive does not call back; the demo posts the push itself)."""
    from datetime import UTC, datetime, timedelta

    from colony.flows.recordings.drive_folders import KIND, METHOD
    from colony.store import claims
    from colony.store.recordings import drive_channels

    with db.transaction(org_id) as cur:
        claims.claim(cur, org_id, KIND, FOLDER, METHOD, "local-demo")
        if drive_channels.get(cur, "demo-channel") is None:
            expires = datetime.now(UTC) + timedelta(days=1)
            drive_channels.add(cur, "demo-channel", org_id, FOLDER, f"res-{FOLDER}", expires)


def run_knowledge_demo(demo: DemoContext) -> None:
    from colony.testing.drive_server import push_headers
    from colony.testing.notion_server import signed_headers, webhook_event

    db, knowledge, org_id = demo.db, demo.knowledge, demo.org_id
    servers, token, say = demo.servers, demo.token, demo.say
    connect_demo_workspace(demo.settings, db, org_id)
    bind_demo_folder(db, org_id)

    with httpx.Client(timeout=60) as http:
        say("Drive: a Meet Notes transcript lands in the watched folder; Drive notifies us…")
        headers = push_headers(
            channel_id="demo-channel",
            token=watch_token(DRIVE_SECRET, org_id, FOLDER),
            message_number=1,
            folder_id=FOLDER,
        )
        reply = http.post(servers.urls["drive-webhook"], headers=headers).json()
        say(f"  drive-webhook: {reply}")
        recording = _wait(
            demo,
            db,
            org_id,
            "SELECT id, status, chunk_count, transcript_tokens,"
            " signals, summary, error FROM recordings WHERE status IN"
            " ('processed', 'failed')",
            "AGT-006",
        )
        say(
            f"  AGT-006: {recording['transcript_tokens']} tokens in {recording['chunk_count']}"
            f" pass-1 chunks → {len(recording['signals'])} signals; summary:"
        )
        say(f"    {recording['summary']}")
        follow = _wait(
            demo,
            db,
            org_id,
            "SELECT payload FROM approval_items WHERE kind = 'follow_up'",
            "AGT-007",
        )
        say(f"  AGT-007 follow-up draft awaiting approval: “{follow['payload']['subject']}”")
        with db.transaction(org_id) as cur:
            queue = fetch_all(
                cur,
                "SELECT kind, count(*) AS n FROM approval_items WHERE"
                " source_agent IN ('AGT-006', 'AGT-007') GROUP BY kind",
            )
        say("  approval queue: " + ", ".join(f"{r['kind']}={r['n']}" for r in queue))

        say("Notion: two pages edited in the KC-01 / KC-04 databases; Notion calls the webhook…")
        for page in notion_pages()["pages"]:
            body = webhook_event(page["id"], parent_database=page["database"])
            answer = http.post(
                servers.urls["notion-webhook"],
                content=body,
                headers=signed_headers(NOTION_SECRET, body),
            ).json()
            say(f"  notion-webhook: {answer}")
        _wait(
            demo,
            db,
            org_id,
            "SELECT count(DISTINCT source_id) AS n FROM kc_chunks WHERE"
            " source = 'notion' HAVING count(DISTINCT source_id) >= 2",
            "the re-embed tasks",
        )
        hits = knowledge.retrieve(org_id, "physicians see this as surveillance", ["KC-04"], 1)
        say(f"  re-embedded; KC-04 now answers with: {hits['KC-04'][0].title!r}")

        with db.transaction(org_id) as cur:
            item = fetch_one(
                cur,
                "SELECT id, payload FROM approval_items WHERE kind ="
                " 'kc_update_candidate' ORDER BY created_at LIMIT 1",
            )
        if item is None:
            say("  (no KC candidate was proposed)")
            return
        content = item["payload"]["content"]
        say(f"KC lifecycle: approving KC-09 candidate “{content[:90]}…”")
        response = http.post(
            servers.urls["approval"],
            json={"item_id": item["id"], "action": "approve"},
            headers={"Authorization": f"Bearer {token}"},
        )
        say(f"  approval function: {response.status_code} {response.json().get('status')}")
        hits = knowledge.retrieve(org_id, content, ["KC-09"], 1)
        top = hits["KC-09"][0] if hits["KC-09"] else None
        seen = top is not None and top.content == content
        say(
            f"  next KC-09 retrieval returns it first: {seen} (similarity"
            f" {top.similarity if top else 0:.3f})"
        )


def _wait(
    demo: DemoContext, db: Database, org_id: str, sql: str, what: str, timeout: float = 180
) -> Any:
    """The first row ``sql`` returns in the org, once the functions have written it."""

    def probe() -> Any:
        with db.transaction(org_id) as cur:
            return fetch_one(cur, sql)

    return wait_until(what, probe, timeout, alive=demo.servers.check)
