"""KC-08 exemplars chosen by angle and outcome (issue 19 item 3), against the real embedded
PostgreSQL: the selection's filters and ranking, on the shared partition and on an org's own,
and the lifecycle from an approved, replied-to message to the next campaign's prompt."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.errors import ValidationFailed
from colony.flows.approvals import approval
from colony.flows.campaigns import campaign
from colony.flows.outbound import delivery, replies, sending
from colony.knowledge import KnowledgeStore, outcomes, tiering
from colony.knowledge.store import ChunkIn
from colony.llm.agent_call import llm_from_settings
from colony.llm.runner import StructuredRunner
from colony.local.demo import load_demo
from colony.ports import InboundMail
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.store.db import Database
from colony.testing.inline import FIXED_NOW, InlineTransport, local_deps, run_until_idle
from tests.conftest import PgDB
from tests.test_replies import Accepting, Recorder
from tests.test_sending import SETTINGS

pytestmark = pytest.mark.covers("KC-08", "AGT-005", "ENT-007")

ALPHA, BETA = "org_alpha", "org_beta"
QUERY = "regional health system renewing medical office leases in 2027"


def _org(db: Database, org: str) -> None:
    with db.transaction(org) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))


def _message(
    store: KnowledgeStore,
    org: str,
    item: str,
    text: str,
    angle: str,
    tier: str,
    outcome: str | None,
) -> None:
    tags = {"angle": angle, "tier": tier, "step": "1"}
    store.sync_source(org, "approval", item, [ChunkIn("KC-08", text, title=item, tags=tags)])
    if outcome is not None:
        with store._db.transaction(org) as cur:  # as delivery.record does, in its transaction
            assert outcomes.record(cur, org, item, outcome)


@pytest.fixture
def store(testdb: PgDB) -> KnowledgeStore:
    db = testdb.app()
    store = KnowledgeStore(db, OfflineHashEmbedder())
    for org in (ALPHA, BETA):
        _org(db, org)
    near = QUERY + " with a note on occupancy"
    _message(store, ALPHA, "near-delivered", near, "Signal", "T1", "delivered")
    far = "Quick question about your teams"
    _message(store, ALPHA, "far-replied", far, "Signal", "T1", "replied_positive")
    _message(store, ALPHA, "near-bounced", QUERY, "Signal", "T1", "bounced")
    _message(store, ALPHA, "t2-pending", QUERY + " and clinics", "Signal", "T2", None)
    _message(store, ALPHA, "pain-replied", QUERY + " again", "Pain", "T1", "replied_positive")
    # another org's message, in the same angle and the best outcome: never ALPHA's
    _message(store, BETA, "beta-replied", QUERY, "Signal", "T1", "replied_positive")
    return store


def _pick(store: KnowledgeStore, org: str, angle: str, tier: str | None) -> list[tuple[str, str]]:
    vector = store.embed_query(QUERY)
    picked, _ = store.exemplars(org, vector, angle=angle, tier=tier)
    return [(p.title or "", p.selected_by) for p in picked]


def _assert_selection(store: KnowledgeStore) -> None:
    # three of the tier: the T2 message is left out although its outcome beats the bounce;
    # a reply beats a closer delivery, a bounce comes last
    assert _pick(store, ALPHA, "Signal", "T1") == [
        ("far-replied", "angle+tier"),
        ("near-delivered", "angle+tier"),
        ("near-bounced", "angle+tier"),
    ]
    # one of the tier only: the angle decides, and no outcome yet beats a bounce
    assert _pick(store, ALPHA, "Signal", "T2") == [
        ("far-replied", "angle"),
        ("near-delivered", "angle"),
        ("t2-pending", "angle"),
    ]
    # one in the angle: the rest fall back to other angles, marked so
    assert _pick(store, ALPHA, "Pain", None) == [
        ("pain-replied", "angle"),
        ("far-replied", "fallback"),
        ("near-delivered", "fallback"),
    ]
    picked = _pick(store, ALPHA, "Referral", "T1")
    assert len(picked) == 3 and {s for _, s in picked} == {"fallback"}
    assert _pick(store, BETA, "Signal", "T1") == [("beta-replied", "angle")]


def test_selection_filters_by_angle_and_tier_and_ranks_by_outcome(store: KnowledgeStore) -> None:
    _assert_selection(store)


@pytest.mark.covers("TECH-001")
def test_selection_is_the_same_once_the_org_has_its_own_partition(store: KnowledgeStore) -> None:
    assert tiering.promote(store._db, ALPHA).moved
    with store._db.transaction(ALPHA) as cur:
        assert tiering.has_partition(cur, ALPHA)
    _assert_selection(store)
    # an outcome recorded after the move lands on the moved row
    with store._db.transaction(ALPHA) as cur:
        assert outcomes.record(cur, ALPHA, "near-bounced", "replied_positive")
    assert _pick(store, ALPHA, "Signal", "T1")[0] == ("near-bounced", "angle+tier")


def test_bad_selection_input_is_a_clear_error(store: KnowledgeStore) -> None:
    vector = store.embed_query(QUERY)
    with pytest.raises(ValidationFailed, match="angle must be a non-empty string"):
        store.exemplars(ALPHA, vector, angle=" ", tier=None)
    with pytest.raises(ValidationFailed, match="k must be an integer"):
        store.exemplars(ALPHA, vector, angle="Signal", tier=None, k=0)
    with (
        store._db.transaction(ALPHA) as cur,
        pytest.raises(ValidationFailed, match="unknown outcome"),
    ):
        outcomes.record(cur, ALPHA, "near-bounced", "opened")
    with store._db.transaction(ALPHA) as cur:
        assert not outcomes.record(cur, ALPHA, "no-such-item", "delivered")


ORG = "org_zoomprop_demo"


def _pairs(db, sql: str) -> dict:  # type: ignore[no-untyped-def]
    """The ``k`` → ``v`` mapping a query's rows make (under the demo org)."""
    with db.transaction(ORG) as cur:
        return {r["k"]: r["v"] for r in fetch_all(cur, sql)}


def _first_message_items(deps, run_id: str) -> list[dict]:  # type: ignore[no-untyped-def]
    with deps.db.transaction(ORG) as cur:
        return fetch_all(
            cur,
            "SELECT id, payload FROM approval_items WHERE run_id = %s AND kind = 'outbound_message'"
            " ORDER BY id",
            (run_id,),
        )


@pytest.mark.covers("AGT-002", "ENT-011")
def test_a_message_approved_and_replied_to_is_the_next_campaigns_first_exemplar(
    testdb: PgDB,
) -> None:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    settings = Settings.from_env(SETTINGS)
    llm = llm_from_settings(settings, db)
    recorder = Recorder(llm.chat)
    llm = dataclasses.replace(llm, runner=StructuredRunner(recorder))
    deps = local_deps(settings, db, InlineTransport(), llm, knowledge, sender=Accepting())
    with db.transaction(ORG) as cur:
        ids = [r["id"] for r in fetch_all(cur, "SELECT id FROM contacts ORDER BY external_id")]

    # campaign 1, angle Signal: draft, approve two, send them; one is answered, one bounces
    first = campaign.create_campaign(
        deps, ORG, name="Signal one", angle="Signal", tier="T1", contact_ids=ids
    )
    run_one = campaign.launch(deps, ORG, first)
    assert not run_until_idle(deps, deps.transport).dead_letters
    items = _first_message_items(deps, run_one)
    assert len(items) >= 3
    answered, bounced = items[1], items[2]
    person = approval.Actor("user_founder", "ui")
    for item in (answered, bounced):
        approval.decide(deps, ORG, item["id"], "approve", actor=person)
    with db.transaction(ORG) as cur:
        chunk = fetch_one(
            cur,
            "SELECT domain, tags FROM kc_chunks WHERE source = 'approval' AND source_id = %s",
            (answered["id"],),
        )
        outbox = {
            r["approval_item_id"]: r["id"]
            for r in fetch_all(cur, "SELECT id, approval_item_id FROM outbox")
        }
    assert chunk["domain"] == "KC-08"
    # written in the tier AGT-004 decided for the contact, not the campaign's (issue 39)
    tier = answered["payload"]["tier"]
    with db.transaction(ORG) as cur:
        decided = fetch_one(
            cur, "SELECT icp_tier FROM contacts WHERE id = %s", (answered["payload"]["contact_id"],)
        )
    assert tier == decided["icp_tier"]
    assert {k: chunk["tags"].get(k) for k in ("angle", "tier", "step")} == {
        "angle": "Signal",
        "tier": tier,
        "step": "1",
    }
    assert "outcome" not in chunk["tags"]
    for item in (answered, bounced):
        assert sending.send(deps, ORG, outbox[item["id"]])["status"] == "sent"
    delivery.record(deps, ORG, outbox[bounced["id"]], "bounced", "evt-bounce")
    reply = InboundMail(
        message_id="<r-1@prospect.example>",
        sender=str(answered["payload"]["to"]),
        subject="Re: " + str(answered["payload"]["subject"]),
        text="Yes, let's book a call next week.",
        in_reply_to=f"<{outbox[answered['id']]}@zoomprop.example>",
        received_at=FIXED_NOW - timedelta(hours=1),
    )
    assert replies.ingest(deps, reply, event_id="evt-reply")["sentiment"] == "positive"
    fared = _pairs(
        db,
        "SELECT source_id AS k, tags->>'outcome' AS v FROM kc_chunks"
        " WHERE source = 'approval' AND domain = 'KC-08'",
    )
    assert fared == {answered["id"]: "replied_positive", bounced["id"]: "bounced"}
    # each outcome also credits the chunks that grounded the draft's model call (provenance)
    with db.transaction(ORG) as cur:
        credited = {
            (r["id"], r["outcome"]): r["n"]
            for r in fetch_all(
                cur,
                "SELECT i.id, k.outcome, count(*) AS n FROM approval_items i"
                " JOIN kc_chunk_credits k ON k.call_id = i.llm_call_id"
                " WHERE i.id = ANY(%s) GROUP BY i.id, k.outcome",
                ([answered["id"], bounced["id"]],),
            )
        }
    assert set(credited) == {(answered["id"], "replied_positive"), (bounced["id"], "bounced")}
    assert all(n >= 1 for n in credited.values())

    # campaign 2, same angle, other contacts: the answered message comes first
    in_tier = _pairs(
        db,
        "SELECT tags->>'tier' AS k, count(*) AS v FROM kc_chunks"
        " WHERE domain = 'KC-08' AND tags->>'angle' = 'Signal' GROUP BY 1",
    )
    recorder.requests.clear()
    second = campaign.create_campaign(
        deps, ORG, name="Signal two", angle="Signal", tier="T1", contact_ids=ids
    )
    run_two = campaign.launch(deps, ORG, second)
    assert not run_until_idle(deps, deps.transport).dead_letters
    drafted = _first_message_items(deps, run_two)
    assert drafted
    subject = answered["payload"]["subject"]
    for item in drafted:
        top = item["payload"]["exemplars"][0]
        assert (top["domain"], top["title"]) == ("KC-08", subject)
        # each contact is written in the tier AGT-004 decided for it, and its exemplars are
        # picked within that tier when the angle has three there (knowledge.outcomes)
        by = "angle+tier" if in_tier.get(item["payload"]["tier"], 0) >= 3 else "angle"
        assert (top["selected_by"], top["outcome"]) == (by, "replied_positive")
        fared_in_order = [
            e.get("outcome") for e in item["payload"]["exemplars"] if e["domain"] == "KC-08"
        ]
        assert fared_in_order[0] == "replied_positive"
        assert "bounced" not in fared_in_order or fared_in_order[-1] == "bounced"
    # the model was given it first: the first KC block of the prompt is the answered message
    asked = [r for r in recorder.requests if r.metadata.get("agent_id") == "AGT-005"]
    assert len(asked) == len(drafted)
    context = next(m.content for m in asked[0].messages if "source=kc" in m.content)
    header = context[context.index("source=kc") :].split("\n", 1)[0]
    assert "domain=KC-08" in header and subject in header and "outcome=replied_positive" in header
