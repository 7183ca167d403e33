"""AGT-008 content and AGT-009 onboarding: real PostgreSQL, the offline model, GCS (its JSON
API over REST) against ``gcp-storage-emulator``; the last test drives the real ``approval``,
``onboarding`` and ``content`` functions over HTTP and Pub/Sub push."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from datetime import time as clock_time
from pathlib import Path

import httpx
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.storage import blob_store_from_settings
from colony.adapters.transport_local import LocalTransport
from colony.contracts.chat import ListApprovalsArgs
from colony.contracts.events import DealClosedWon
from colony.errors import NotFound, ProviderUnavailable, ValidationFailed
from colony.flows import content
from colony.flows.approvals import approval
from colony.flows.chat import tools
from colony.flows.handlers import PUBSUB_HANDLERS
from colony.flows.insights import brief
from colony.flows.pipeline import deals, onboarding
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.demo import load_demo
from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.policy.outbound import competitor_mentions
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.testing.inline import InlineTransport, local_deps, run_until_idle
from colony.testing.loopback import closed_port
from tests.conftest import APP_ROLE, Gcs, PgDB, wait_for
from tests.test_storage import fetch, verify_v4_signed_url

pytestmark = pytest.mark.covers(
    "AGT-008",
    "AGT-009",
    "ENT-003",
    "ENT-011",
    "TECH-005",
    "fn:content",
    "fn:onboarding",
    "fn:approval",
)

ORG = "org_zoomprop_demo"
TTL = 900
COMPETITORS = ["CareSpace Analytics", "FacilityIQ", "LeaseLogic Health"]


def make_deps(testdb: PgDB, blobs=None) -> Deps:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    settings = Settings.from_env({"COLONY_SIGNED_URL_TTL_SECONDS": str(TTL)})
    return local_deps(
        settings, db, InlineTransport(), llm_from_settings(settings, db), knowledge, blobs=blobs
    )


def deal_id(deps: Deps, external: str) -> str:
    with deps.db.transaction(ORG) as cur:
        return fetch_one(cur, "SELECT id FROM deals WHERE external_id = %s", (external,))["id"]


def rows(deps: Deps, sql: str, params: tuple = ()) -> list[dict]:
    with deps.db.transaction(ORG) as cur:
        return fetch_all(cur, sql, params)


def kit_rows(deps: Deps) -> tuple[list[dict], list[dict]]:
    kits = rows(deps, "SELECT deal_id, approval_item_id, object_name, status FROM deployment_kits")
    items = rows(deps, "SELECT id, payload FROM approval_items WHERE kind = 'deployment_kit'")
    return kits, items


# ─── AGT-008 content ─────────────────────────────────────────────────────────────────


@pytest.mark.covers("KC-01", "KC-05", "KC-07")
def test_content_piece_is_grounded_queued_once_and_published_on_approval(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    request_id = content.request_content(
        deps, ORG, "how a health system cut lease costs with utilization data", "blog_post"
    )
    stats = run_until_idle(deps, deps.transport, duplicates=3)  # at-least-once delivery
    assert stats.delivered == 3 and not stats.rejected
    items = rows(
        deps,
        "SELECT id, status, payload, source_agent FROM approval_items WHERE kind = 'content_piece'",
    )
    assert len(items) == 1 and items[0]["status"] == "pending"
    piece = items[0]["payload"]
    assert items[0]["source_agent"] == "AGT-008" and piece["format"] == "blog_post"
    grounding = {g["domain"] for g in piece["grounding"]}
    assert grounding and grounding <= {"KC-01", "KC-05", "KC-07"}
    assert not competitor_mentions(piece["body"], COMPETITORS)
    # every sentence of the offline piece comes from the retrieved KC material
    kc_text = " ".join(
        r["content"]
        for r in rows(
            deps,
            "SELECT content FROM kc_chunks WHERE domain = ANY(%s)",
            (["KC-01", "KC-05", "KC-07"],),
        )
    )
    body_lines = [p for p in piece["body"].split("\n\n") if not p.startswith("#")]
    assert body_lines and all(" ".join(p.split()) in " ".join(kc_text.split()) for p in body_lines)
    assert content.queued_item(deps, ORG, request_id)["id"] == items[0]["id"]

    # published only once a person approves it (CONST-001), and once
    assert rows(deps, "SELECT id FROM published_content") == []
    approval.decide(
        deps,
        ORG,
        items[0]["id"],
        "edit",
        actor=approval.Actor("founder", "ui"),
        edited={"title": "Lease costs, cut with data"},
    )
    published = rows(deps, "SELECT approval_item_id, title, published_at FROM published_content")
    assert [(p["approval_item_id"], p["title"]) for p in published] == [
        (items[0]["id"], "Lease costs, cut with data")
    ]
    # the next day's brief counts it as content published yesterday
    next_day = published[0]["published_at"].astimezone(UTC).date() + timedelta(days=1)
    deps = replace(deps, clock=lambda: datetime.combine(next_day, clock_time(6), tzinfo=UTC))
    assert brief.daily_brief(deps, ORG)["data_snapshot"]["content_published"] == 1


def test_content_without_grounding_is_a_clear_rejection(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    with deps.db.transaction("org_bare") as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES ('org_bare', 'Bare')")
    content.request_content(deps, "org_bare", "anything at all", "linkedin_post")
    stats = run_until_idle(deps, deps.transport)
    assert stats.rejected == [(stats.rejected[0][0], "validation_failed")]
    with deps.db.transaction("org_bare") as cur:
        assert fetch_all(cur, "SELECT id FROM approval_items") == []


# ─── deal updates and AGT-009 onboarding ─────────────────────────────────────────────


def close_deal(deps: Deps, external: str) -> str:
    """Approve a deal update moving ``external`` to closed_won; returns the deal id."""
    deal = deal_id(deps, external)
    item = deals.propose_deal_update(
        deps,
        ORG,
        deal,
        {"stage": "closed_won", "close_date": "2026-11-30"},
        source={"recording_id": "rec-1"},
    )
    assert (
        approval.decide(deps, ORG, item, "approve", actor=approval.Actor("founder", "ui"))["status"]
        == "applied"
    )
    return deal


@pytest.mark.covers("KC-10")
def test_closed_won_builds_one_signed_kit_in_gcs(testdb: PgDB, gcs: Gcs) -> None:
    deps = make_deps(testdb, blobs=gcs.store)
    deal = close_deal(deps, "D-005")
    assert rows(deps, "SELECT stage, close_date::text AS d FROM deals WHERE id = %s", (deal,)) == [
        {"stage": "closed_won", "d": "2026-11-30"}
    ]
    assert len(deps.transport.pending) == 1  # one deal.closed_won event
    stats = run_until_idle(deps, deps.transport, duplicates=3)
    assert stats.delivered == 3 and not stats.rejected and not stats.dead_letters

    kits, items = kit_rows(deps)
    assert len(kits) == 1 == len(items) and kits[0]["approval_item_id"] == items[0]["id"]
    payload = items[0]["payload"]
    assert payload["deal_id"] == deal and payload["url_expires_in_seconds"] == TTL
    assert payload["gcs_uri"] == f"gs://{gcs.bucket}/{kits[0]['object_name']}"
    # the URL: the configured expiry, a V4 signature that verifies, and the kit behind it
    query = verify_v4_signed_url(payload["signed_url"], gcs.key_file)
    assert query["X-Goog-Expires"] == str(TTL)
    document = fetch(payload["signed_url"]).decode()
    assert document == gcs.store.get(kits[0]["object_name"]).decode()
    assert document.startswith("# Deployment kit: Granite Peak Behavioral Health")
    assert "## Deal summary" in document and "Stage: closed won." in document
    assert payload["playbooks"] and all(f"## {p}" in document for p in payload["playbooks"])
    with deps.db.transaction(ORG) as cur:
        calls = fetch_one(cur, "SELECT count(*) AS n FROM llm_calls WHERE agent_id = 'AGT-009'")
    assert calls["n"] == 1

    # an approved kit is released, once
    approval.decide(deps, ORG, items[0]["id"], "approve", actor=approval.Actor("founder", "ui"))
    assert rows(deps, "SELECT status FROM deployment_kits") == [{"status": "released"}]

    # ... and grows KC-10 (issue 19 item 3): the kit's playbooks as a person approved them,
    # tagged with the deal and its industry and segment, for this org only; what is the
    # customer's own stays out, since the next kit goes to another customer: not the deal
    # summary, not the customer's name (in the title or the text)
    item = items[0]["id"]
    chunks = rows(
        deps,
        "SELECT domain, title, content, tags FROM kc_chunks"
        " WHERE source = 'approval' AND source_id = %s ORDER BY chunk_index",
        (item,),
    )
    assert len(chunks) >= len(payload["playbooks"]) and {c["domain"] for c in chunks} == {"KC-10"}
    kept = "\n".join(c["content"] for c in chunks)
    assert all(f"## {p}" in kept for p in payload["playbooks"])
    assert "## Deal summary" not in kept and "Stage: closed won." not in kept
    assert {c["tags"]["part"] for c in chunks} == {"playbook"}
    (facts,) = rows(
        deps,
        "SELECT c.enrichment->>'vertical' AS industry, c.enrichment->>'sub_vertical' AS segment,"
        " c.company, c.name AS contact, d.name AS deal"
        " FROM deals d JOIN contacts c ON c.id = d.contact_id WHERE d.id = %s",
        (deal,),
    )
    assert facts["industry"] and facts["segment"] and facts["company"]
    assert facts["company"] in document  # the kit itself names the customer...
    for name in (facts["company"], facts["contact"], facts["deal"]):  # ... KC-10 does not
        assert name.lower() not in kept.lower()
        assert all(name.lower() not in c["title"].lower() for c in chunks)
    for chunk in chunks:
        assert (
            chunk["title"] == f"Deployment kit playbook ({facts['industry']} / {facts['segment']})"
        )
        assert {
            k: chunk["tags"][k] for k in ("approval_item", "deal_id", "industry", "segment")
        } == {
            "approval_item": item,
            "deal_id": deal,
            "industry": facts["industry"],
            "segment": facts["segment"],
        }
    # AGT-009's KC-10 retrieval reaches the kept playbooks (searched by what one says); another
    # org's cannot, and approving again re-embeds nothing
    query = chunks[-1]["content"]
    found = deps.knowledge.retrieve(ORG, query, ("KC-10",), onboarding.PLAYBOOKS)["KC-10"]
    assert item in {hit.tags.get("approval_item") for hit in found}
    assert deps.knowledge.retrieve("org_someone_else", query, ("KC-10",), 5)["KC-10"] == []
    again = approval.decide(deps, ORG, item, "approve", actor=approval.Actor("founder", "ui"))
    assert again["changed"] is False
    assert len(rows(deps, "SELECT id FROM kc_chunks WHERE source_id = %s", (item,))) == len(chunks)


def test_a_kit_is_shown_for_review_with_a_freshly_signed_link(testdb: PgDB, gcs: Gcs) -> None:
    deps = make_deps(testdb, blobs=gcs.store)
    built_at = deps.clock()
    close_deal(deps, "D-005")
    run_until_idle(deps, deps.transport)
    kits, items = kit_rows(deps)
    stored = items[0]["payload"]
    assert stored["url_expires_at"] == (built_at + timedelta(seconds=TTL)).isoformat()
    # Reviewed two hours later: the link stored at build time expired after TTL seconds. It
    # is replaced by an unusable one here, so only a link signed now can pass the checks.
    dead = "https://storage.invalid/expired"
    with deps.db.transaction(ORG) as cur:
        cur.execute(
            "UPDATE approval_items SET payload = payload || jsonb_build_object("
            "'signed_url', %s::text) WHERE id = %s",
            (dead, items[0]["id"]),
        )
    reviewed_at = built_at + timedelta(hours=2)
    deps = replace(deps, clock=lambda: reviewed_at)
    # a content piece waits in the same queue: it gets no link
    content.request_content(deps, ORG, "utilization pilots for CFOs", "linkedin_post")
    run_until_idle(deps, deps.transport)

    ctx = tools.ToolContext(deps, ORG, "founder", "session-1", "call-1")
    listed = tools.run(tools.TOOLS["list_approvals"], ctx, ListApprovalsArgs())
    assert listed["ok"] and listed["result"]["pending_total"] == 2
    cards = {c["kind"]: c for c in listed["result"]["items"]}
    assert "link" not in cards["content_piece"]
    kit = cards["deployment_kit"]
    assert kit["id"] == items[0]["id"] and kit["summary"] == stored["title"]
    link = kit["link"]
    assert link["url"] != dead and link["expires_in_seconds"] == TTL
    assert link["expires_at"] == (reviewed_at + timedelta(seconds=TTL)).isoformat()
    # signed just now (verify_v4_signed_url checks the signing time), by our key, for the kit
    assert verify_v4_signed_url(link["url"], gcs.key_file)["X-Goog-Expires"] == str(TTL)
    assert fetch(link["url"]) == gcs.store.get(kits[0]["object_name"])
    only_kits = tools.run(
        tools.TOOLS["list_approvals"], ctx, ListApprovalsArgs(kind="deployment_kit")
    )["result"]
    assert [c["id"] for c in only_kits["items"]] == [kit["id"]]


def test_other_deal_updates_publish_nothing_and_bad_updates_are_refused(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    deal = deal_id(deps, "D-004")
    item = deals.propose_deal_update(deps, ORG, deal, {"stage": "proposal", "value": 210000})
    approval.decide(deps, ORG, item, "approve", actor=approval.Actor("founder", "ui"))
    assert rows(deps, "SELECT stage, value::float AS v FROM deals WHERE id = %s", (deal,)) == [
        {"stage": "proposal", "v": 210000.0}
    ]
    assert not deps.transport.pending
    with pytest.raises(NotFound, match="no-such-deal"):
        deals.propose_deal_update(deps, ORG, "no-such-deal", {"stage": "closed_won"})
    with pytest.raises(ValidationFailed, match=r"changes\.stage"):
        deals.propose_deal_update(deps, ORG, deal, {"stage": "won!"})
    with pytest.raises(ValidationFailed, match="changes nothing"):
        deals.propose_deal_update(deps, ORG, deal, {})


def test_a_deal_event_for_an_unknown_deal_is_a_clear_error_with_no_rows(
    testdb: PgDB, gcs: Gcs
) -> None:
    deps = make_deps(testdb, blobs=gcs.store)
    event = DealClosedWon(org_id=ORG, deal_id="deal-that-does-not-exist")
    with pytest.raises(NotFound, match="deal-that-does-not-exist"):
        PUBSUB_HANDLERS["onboarding"](deps, event, "evt-unknown")
    assert kit_rows(deps) == ([], [])
    # an open deal is not onboarded: retried (the closing approval may still be committing)
    open_deal = DealClosedWon(org_id=ORG, deal_id=deal_id(deps, "D-002"))
    with pytest.raises(onboarding.DealNotReady):
        PUBSUB_HANDLERS["onboarding"](deps, open_deal, "evt-open")
    assert kit_rows(deps) == ([], [])


def test_a_gcs_failure_leaves_no_rows_and_the_retry_builds_one_kit(
    testdb: PgDB, gcs: Gcs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real client against a port nobody listens on: the SDK's own connection error.
    settings = Settings.from_env(
        {"COLONY_ASSETS_BUCKET": gcs.bucket, "COLONY_SIGNING_KEY_FILE": str(gcs.key_file)}
    )
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{closed_port()}")
    dead = blob_store_from_settings(settings, attempts=1, timeout=2.0)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.url)
    deps = make_deps(testdb, blobs=dead)
    deal = close_deal(deps, "D-003")
    event = DealClosedWon(org_id=ORG, deal_id=deal)
    with pytest.raises(ProviderUnavailable):
        onboarding.build_kit(deps, event, "evt-1")
    assert kit_rows(deps) == ([], [])  # no partial kit, no approval item
    assert rows(deps, "SELECT event_id FROM processed_events WHERE handler = 'onboarding'") == []

    deps = replace(deps, blob_store=gcs.store)  # GCS is back; the event is redelivered
    first = onboarding.build_kit(deps, event, "evt-1")
    assert first["created"] is True
    assert onboarding.build_kit(deps, event, "evt-1") == {"duplicate": True}
    assert onboarding.build_kit(deps, event, "evt-2")["created"] is False  # a second publish
    kits, items = kit_rows(deps)
    assert len(kits) == len(items) == 1
    with deps.db.transaction(ORG) as cur:
        calls = fetch_one(cur, "SELECT count(*) AS n FROM llm_calls WHERE agent_id = 'AGT-009'")
    assert calls["n"] == 1  # the kit's model output was kept across the failed attempt
    assert gcs.store.get(kits[0]["object_name"]).startswith(b"# Deployment kit: Hudson Crest")


# ─── the real functions over HTTP and Pub/Sub push ───────────────────────────────────


def test_functions_close_a_deal_build_the_kit_and_publish_content(
    testdb: PgDB, gcs: Gcs, tmp_path: Path
) -> None:
    deps = make_deps(testdb)
    deal = deal_id(deps, "D-005")
    item = deals.propose_deal_update(deps, ORG, deal, {"stage": "closed_won"})
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_SIGNED_URL_TTL_SECONDS": str(TTL),
        **gcs.env,
    }
    names = ["approval", "onboarding", "content", "chat"]
    with FunctionServers(env, names, log_dir=tmp_path) as servers, httpx.Client(timeout=60) as http:
        auth = {"Authorization": f"Bearer {mint_local_token(tmp_path, ORG)}"}
        reply = http.post(
            servers.urls["approval"], json={"item_id": item, "action": "approve"}, headers=auth
        )
        assert reply.status_code == 200 and reply.json()["status"] == "applied", reply.text
        # the approval function published deal.closed_won; onboarding (a push) built the kit
        kit = wait_for(
            lambda: rows(
                deps,
                "SELECT k.gcs_uri, a.payload FROM deployment_kits k JOIN"
                " approval_items a ON a.id = k.approval_item_id",
            )[:1],
            what="the deployment kit",
        )[0]
        url = kit["payload"]["signed_url"]
        assert verify_v4_signed_url(url, gcs.key_file)["X-Goog-Expires"] == str(TTL)
        assert fetch(url).decode().startswith("# Deployment kit: Granite Peak")
        # the review queue (chat function) signs its own link from the stored object name
        with deps.db.transaction(ORG) as cur:
            cur.execute(
                "UPDATE approval_items SET payload = payload - 'signed_url'"
                " WHERE kind = 'deployment_kit'"
            )
        queue = http.get(
            f"{servers.urls['chat']}/approvals", params={"kind": "deployment_kit"}, headers=auth
        )
        assert queue.status_code == 200, queue.text
        assert queue.json()["pending_total"] >= 1
        [card] = queue.json()["items"]
        assert card["summary"] == kit["payload"]["title"]
        assert card["link"]["expires_in_seconds"] == TTL
        assert verify_v4_signed_url(card["link"]["url"], gcs.key_file)["X-Goog-Expires"] == str(TTL)
        assert fetch(card["link"]["url"]).decode().startswith("# Deployment kit: Granite Peak")
        too_long = http.get(
            f"{servers.urls['chat']}/approvals", params={"kind": "k" * 41}, headers=auth
        )
        assert too_long.status_code == 400
        assert too_long.json()["error"]["code"] == "validation_failed"

        # a push for an unknown deal is acknowledged, recorded as rejected, and writes nothing
        data = json.dumps({"kind": "deal.closed_won", "org_id": ORG, "deal_id": "nope"})
        message = {
            "data": base64.b64encode(data.encode()).decode(),
            "messageId": "push-unknown-deal",
            "attributes": {"org_id": ORG},
        }
        push = {"message": message, "subscription": "projects/colony-local/subscriptions/x"}
        assert http.post(servers.urls["onboarding"], json=push).is_success
        assert len(kit_rows(deps)[0]) == 1

        # content through the transport to the content function, approved over HTTP
        with LocalTransport(servers.urls) as transport:
            deps = replace(deps, transport=transport)
            request_id = content.request_content(deps, ORG, "proof points for CFOs", "one_pager")
            assert transport.drain(60)
        piece = content.queued_item(deps, ORG, request_id)
        assert piece is not None and piece["payload"]["format"] == "one_pager"
        decision = {"item_id": piece["id"], "action": "approve"}
        reply = http.post(servers.urls["approval"], json=decision, headers=auth)
        assert reply.status_code == 200, reply.text
    assert len(rows(deps, "SELECT id FROM published_content")) == 1
    owner = testdb.owner_connection()
    rejected = fetch_all(
        owner.cursor(), "SELECT function, event_id, reason FROM rejected_deliveries"
    )
    owner.close()
    assert [(r["function"], r["event_id"]) for r in rejected] == [
        ("onboarding", "push-unknown-deal")
    ]
    assert rejected[0]["reason"].startswith("not_found")
