"""The campaign pipeline through real functions-framework servers over HTTP.

Every function runs as its own `functions-framework` subprocess against the embedded
PostgreSQL; the local transport pushes the same Pub/Sub envelopes GCP would, and the test
drives HTTP only (approvals, delivery events, raw pushes). With `gcloud` on the machine the
same chain also runs through the real Pub/Sub emulator with push subscriptions.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.transport_local import LocalTransport
from colony.flows.campaigns import campaign
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.demo import load_demo
from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.testing.inline import local_deps
from colony.testing.resend_server import signed, webhook_secret
from colony.testing.smtp_server import SmtpServer
from tests.conftest import APP_ROLE, PgDB, wait_for

pytestmark = pytest.mark.covers(
    "fn:campaign",
    "fn:enrichment",
    "fn:qualification",
    "fn:message-generator",
    "fn:approval",
    "fn:delivery-events",
    "ENT-012",
    "CONST-001",
    "TECH-003",
)

ORG = "org_zoomprop_demo"
SECRET = webhook_secret(b"test-delivery-secret")
PICK = ["P-001", "P-002", "P-003", "P-004", "P-005", "P-006", "P-007", "P-012"]  # 2 anti-ICP


@pytest.fixture
def stack(
    testdb: PgDB, tmp_path: Path, smtp: SmtpServer
) -> Iterator[tuple[FunctionServers, Deps, Path]]:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_DELIVERY_WEBHOOK_SECRET": SECRET,
        "COLONY_APPROVAL_TOKEN_KEY": "test-approval-key",
        **smtp.env(),
    }
    with FunctionServers(env, log_dir=tmp_path) as servers:
        transport = LocalTransport(servers.urls)
        settings = Settings.from_env({})
        deps = local_deps(settings, db, transport, llm_from_settings(settings, db), knowledge)
        try:
            yield servers, deps, tmp_path
        finally:
            transport.close()


def contact_ids(deps: Deps, external: list[str]) -> list[str]:
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(cur, "SELECT id FROM contacts WHERE external_id = ANY(%s)", (external,))
    return [r["id"] for r in rows]


def run_state(deps: Deps, run_id: str):
    with deps.db.transaction(ORG) as cur:
        return fetch_one(
            cur,
            "SELECT status, contacts_total, contacts_done FROM campaign_runs WHERE id = %s",
            (run_id,),
        )


def sent_message(deps: Deps) -> dict | None:
    with deps.db.transaction(ORG) as cur:
        return fetch_one(cur, "SELECT id, message_id FROM outbox WHERE status = 'sent'")


def llm_calls(deps: Deps) -> dict[str, int]:
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(cur, "SELECT agent_id, count(*) AS n FROM llm_calls GROUP BY agent_id")
    return {r["agent_id"]: r["n"] for r in rows}


def test_campaign_over_http_to_approval_outbox_and_delivery(stack, smtp: SmtpServer) -> None:
    servers, deps, data_dir = stack
    campaign_id = campaign.create_campaign(
        deps, ORG, name="e2e", angle="Signal", tier="T1", contact_ids=contact_ids(deps, PICK)
    )
    run_id = campaign.launch(deps, ORG, campaign_id)
    state = wait_for(
        lambda: (s := run_state(deps, run_id)) and s["status"] == "completed" and s,
        what="the run to complete",
    )
    assert state["contacts_done"] == state["contacts_total"] == len(PICK)
    calls = llm_calls(deps)
    assert calls["AGT-003"] == calls["AGT-004"] == len(PICK) - 2  # anti-ICP cost nothing
    with deps.db.transaction(ORG) as cur:
        items = fetch_all(cur, "SELECT id FROM approval_items WHERE run_id = %s", (run_id,))
    assert len(items) == calls.get("AGT-005", 0) > 0

    approve = servers.urls["approval"]
    token = mint_local_token(data_dir, ORG)
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=30) as http:
        body = {"item_id": items[0]["id"], "action": "approve"}
        first = http.post(approve, json=body, headers=auth)
        again = http.post(approve, json=body, headers=auth)
        assert first.status_code == 200 and first.json()["status"] == "applied"
        assert again.status_code == 200 and again.json()["changed"] is False
        # no token, a forged token, another org's token: JSON errors, nothing applied
        assert http.post(approve, json=body).status_code == 401
        forged = http.post(approve, json=body, headers={"Authorization": "Bearer x.y.z"})
        assert forged.status_code == 401 and forged.json()["error"]["code"] == "unauthorized"
        other = {"Authorization": f"Bearer {mint_local_token(data_dir, 'org_other')}"}
        assert http.post(approve, json=body, headers=other).status_code == 404
        as_json = {**auth, "Content-Type": "application/json"}
        malformed = http.post(approve, content=b"{nope", headers=as_json)
        assert malformed.json()["error"]["code"] == "bad_json"

        # the approval handed the message to the send function (Cloud Tasks, locally the
        # transport), which sent it through the SMTP server once, with its unsubscribe headers
        (got,) = wait_for(lambda: smtp.received, what="the approved message at the SMTP server")
        outbox = wait_for(lambda: sent_message(deps), what="the outbox row marked sent")
        assert got.message["Message-ID"] == outbox["message_id"]
        assert got.message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        link = got.message["List-Unsubscribe"].strip("<>")
        assert link.startswith(servers.urls["delivery-events"] + "/unsubscribe?t=")
        # the footer link shows a page and changes nothing; the one-click POST unsubscribes
        page = http.get(link)
        assert page.status_code == 200 and "Unsubscribe" in page.text
        assert "text/html" in page.headers["Content-Type"]
        one_click = http.post(link, data={"List-Unsubscribe": "One-Click"})
        assert one_click.status_code == 200 and "unsubscribed" in one_click.text
        forged = http.post(link[:-4] + "AAAA", data={"List-Unsubscribe": "One-Click"})
        assert forged.status_code == 401 and forged.json()["error"]["code"] == "unauthorized"
        with deps.db.transaction(ORG) as cur:
            assert fetch_one(cur, "SELECT reason FROM suppressions")["reason"] == "unsubscribed"
        # Resend's delivery event, signed as Resend (Svix) signs it, naming the message by
        # the tags the send attached
        tags = {"org_id": ORG, "outbox_id": outbox["id"]}
        data = {"email_id": "re-1", "tags": tags, "to": [got.rcpt_tos[0]]}
        delivered = {"type": "email.delivered", "created_at": "2026-12-01T10:00:00Z", "data": data}
        event = json.dumps(delivered).encode()
        headers = signed(SECRET, event, msg_id="msg_esp_1")
        assert http.post(servers.urls["delivery-events"], content=event, headers=headers).is_success
        bad = signed(webhook_secret(b"wrong"), event, msg_id="msg_esp_1")
        assert (
            http.post(servers.urls["delivery-events"], content=event, headers=bad).status_code
            == 401
        )
    with deps.db.transaction(ORG) as cur:
        assert fetch_one(cur, "SELECT status FROM outbox")["status"] == "delivered"


def test_duplicate_and_malformed_pushes(stack, testdb: PgDB) -> None:
    servers, deps, _ = stack
    ids = contact_ids(deps, ["P-001"])
    campaign_id = campaign.create_campaign(
        deps, ORG, name="dup", angle="Pain", tier="T3", contact_ids=ids
    )
    run_id = campaign.launch(deps, ORG, campaign_id)
    wait_for(
        lambda: (s := run_state(deps, run_id)) and s["status"] == "completed",
        what="the run to complete",
    )
    before = llm_calls(deps)
    # the same handoff pushed three times (same message id) is processed once
    handoff = {
        "kind": "handoff",
        "org_id": ORG,
        "campaign_id": campaign_id,
        "envelope": {
            "parent_run_id": run_id,
            "downstream_agent": "qualification",
            "entity_ids": ids,
            "angle": "Pain",
            "tier": "T3",
            "kc_bucket_hints": ["KC-02"],
        },
    }

    def push(data: bytes, message_id: str) -> httpx.Response:
        envelope = {
            "message": {
                "data": base64.b64encode(data).decode(),
                "messageId": message_id,
                "attributes": {"org_id": ORG},
            },
            "subscription": "projects/colony-local/subscriptions/colony-qualification",
        }
        return httpx.post(servers.urls["qualification"], json=envelope, timeout=30)

    for _ in range(3):
        assert push(json.dumps(handoff).encode(), "dup-1").is_success
    assert llm_calls(deps) == before  # the finished step replayed; nothing recomputed
    # unrecoverable payloads are acknowledged (never retried forever) and recorded
    assert push(b"\xff\xfe not json", "bad-1").is_success
    assert push(json.dumps({"kind": "nonsense", "org_id": ORG}).encode(), "bad-2").is_success
    owner = testdb.owner_connection()
    rejected = fetch_all(owner.cursor(), "SELECT event_id, reason FROM rejected_deliveries")
    owner.close()
    assert {r["event_id"] for r in rejected} >= {"bad-1", "bad-2"}


@pytest.mark.skipif(
    shutil.which("gcloud") is None,
    reason="gcloud (Pub/Sub emulator) not installed: the local-transport"
    " tests above run the same chain",
)
def test_campaign_through_the_real_pubsub_emulator(testdb: PgDB, tmp_path: Path) -> None:
    from google.cloud import pubsub_v1

    from colony.adapters.transport_gcp import GcpTransport
    from colony.registry.functions import FUNCTIONS
    from colony.testing.emulators import pubsub_emulator

    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    project = "colony-e2e"
    with pubsub_emulator(project=project) as host:
        env = {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_TRANSPORT": "gcp",
            "COLONY_GCP_PROJECT": project,
            "PUBSUB_EMULATOR_HOST": host,
            "COLONY_DATA_DIR": str(tmp_path),
        }
        import os

        os.environ["PUBSUB_EMULATOR_HOST"] = host  # for this process's clients
        try:
            with FunctionServers(env, log_dir=tmp_path) as servers:
                publisher = pubsub_v1.PublisherClient()
                subscriber = pubsub_v1.SubscriberClient()
                for function in FUNCTIONS.values():
                    if function.topic:
                        topic = publisher.topic_path(project, function.topic)
                        publisher.create_topic(name=topic)
                        subscriber.create_subscription(
                            name=subscriber.subscription_path(project, f"{function.name}-push"),
                            topic=topic,
                            push_config={"push_endpoint": servers.urls[function.name]},
                        )
                transport = GcpTransport(
                    project,
                    "us-central1",
                    function_urls=servers.urls,
                    pubsub_endpoint=f"http://{host}",
                )
                settings = Settings.from_env({})
                deps = local_deps(
                    settings, db, transport, llm_from_settings(settings, db), knowledge
                )
                picked = contact_ids(deps, ["P-001", "P-002", "P-007"])
                campaign_id = campaign.create_campaign(
                    deps, ORG, name="emu", angle="Signal", tier="T1", contact_ids=picked
                )
                run_id = campaign.launch(deps, ORG, campaign_id)
                state = wait_for(
                    lambda: (s := run_state(deps, run_id)) and s["status"] == "completed" and s,
                    what="the run to complete through the emulator",
                )
                assert state["contacts_done"] == 3
                calls = llm_calls(deps)
                assert calls["AGT-003"] == calls["AGT-004"] == 2  # P-007 is anti-ICP
                subscriber.close()
        finally:
            os.environ.pop("PUBSUB_EMULATOR_HOST", None)


def test_model_free_functions_serve_without_provider_keys_and_model_ones_fail_clearly(
    testdb: PgDB, tmp_path: Path
) -> None:
    """The configured providers are OpenAI, and no key is set anywhere (deployed, the
    webhooks are not granted one). The model-free functions start and serve; the chat
    function serves what needs no model and refuses a turn, its first model use, as a
    configuration error (500, ``config_error``) instead of failing at start-up."""
    org = "org_nokey"
    with testdb.app().transaction(org) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'No Key')", (org,))
        cur.execute(
            "INSERT INTO campaigns (id, org_id, name, angle, tier, status) VALUES"
            " ('cmp-nokey', %s, 'paused', 'Signal', 'T1', 'paused')",
            (org,),
        )
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_DELIVERY_WEBHOOK_SECRET": SECRET,
        "COLONY_LLM_PROVIDER": "openai",
        "COLONY_EMBEDDING_PROVIDER": "openai",
        "OPENAI_API_KEY": "",
        "GEMINI_API_KEY": "",  # set but empty: counts as missing
    }
    names = ["campaign-resume", "delivery-events", "chat"]
    with FunctionServers(env, names, log_dir=tmp_path) as servers, httpx.Client(timeout=30) as http:
        resumed = http.post(
            servers.urls["campaign-resume"], json={"org_id": org, "campaign_id": "cmp-nokey"}
        )
        assert resumed.status_code == 200, resumed.text
        assert resumed.json() == {"campaign_id": "cmp-nokey", "resumed_runs": [], "redispatched": 0}
        delivered = {
            "type": "email.delivered",
            "data": {"tags": {"org_id": org, "outbox_id": "no-such-message"}},
        }
        event = json.dumps(delivered).encode()
        unknown = http.post(
            servers.urls["delivery-events"], content=event, headers=signed(SECRET, event)
        )
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"

        auth = {"Authorization": f"Bearer {mint_local_token(tmp_path, org)}"}
        queue = http.get(f"{servers.urls['chat']}/approvals", headers=auth)
        assert queue.status_code == 200 and queue.json()["items"] == []
        turn = http.post(f"{servers.urls['chat']}/turns", json={"message": "hello"}, headers=auth)
        assert turn.status_code == 500, turn.text
        assert turn.json()["error"]["code"] == "config_error"
    with testdb.app().transaction(org) as cur:
        assert fetch_one(cur, "SELECT status FROM campaigns")["status"] == "active"
