"""The campaign pipeline's flows in-process (real PostgreSQL, offline LLM, inline transport).

The same flows run behind real functions-framework servers in test_functions_e2e.py; here
the delivery semantics are driven directly: duplicates, injected crashes, pauses, and (through
a real function app) failures of ours that must be retried.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.contracts.events import EVENT_ADAPTER, CampaignResume
from colony.flows.approvals import approval
from colony.flows.campaigns import campaign
from colony.flows.handlers import PUBSUB_HANDLERS
from colony.flows.outbound import breaker, delivery
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.llm.runner import StructuredRunner
from colony.local.demo import kc_documents, load_demo, read_json
from colony.observability.telemetry import flush_telemetry
from colony.registry.functions import FUNCTIONS
from colony.registry.functions import topic as registered_topic
from colony.runtime.deps import Deps, build_deps, set_deps_for_tests
from colony.runtime.edge import MemoryRejections
from colony.runtime.faults import Faults
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.testing.inline import InlineTransport, Sent, local_deps, run_until_idle
from colony.testing.sentry_server import SentryServer, reporting_to
from tests.apps import registered_app
from tests.conftest import PgDB
from tests.test_replies import Recorder

pytestmark = pytest.mark.covers(
    "AGT-002",
    "AGT-003",
    "AGT-004",
    "AGT-005",
    "ENT-002",
    "ENT-005",
    "ENT-011",
    "CONST-002",
    "CONST-005",
)

ORG = "org_zoomprop_demo"
ANTI_ICP = read_json("anti_icp_expected.json")


def make_deps(testdb: PgDB, faults: Faults | None = None) -> Deps:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    return local_deps(
        Settings.from_env({}),
        db,
        InlineTransport(),
        llm_from_settings(Settings.from_env({}), db),
        knowledge,
        faults=faults,
    )


def all_contacts_campaign(deps: Deps, tier: str = "T1") -> str:
    with deps.db.transaction(ORG) as cur:
        ids = [r["id"] for r in fetch_all(cur, "SELECT id FROM contacts ORDER BY external_id")]
    return campaign.create_campaign(
        deps, ORG, name="Signal T1", angle="Signal", tier=tier, contact_ids=ids
    )


def llm_calls(deps: Deps) -> dict[str, int]:
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(cur, "SELECT agent_id, count(*) AS n FROM llm_calls GROUP BY agent_id")
    return {r["agent_id"]: r["n"] for r in rows}


def snapshot(deps: Deps, run_id: str) -> dict:
    with deps.db.transaction(ORG) as cur:
        run = fetch_one(
            cur,
            "SELECT status, contacts_total, contacts_done FROM campaign_runs WHERE id = %s",
            (run_id,),
        )
        items = fetch_all(cur, "SELECT subject_id FROM approval_items WHERE run_id = %s", (run_id,))
        scored = fetch_all(
            cur,
            "SELECT external_id, icp_score, icp_disqualifiers, icp_recommendation"
            " FROM contacts ORDER BY external_id",
        )
    return {"run": run, "items": sorted(i["subject_id"] for i in items), "scored": scored}


def run_campaign(deps: Deps, **delivery) -> tuple[str, dict]:
    campaign_id = all_contacts_campaign(deps)
    run_id = campaign.launch(deps, ORG, campaign_id)
    stats = run_until_idle(deps, deps.transport, **delivery)
    assert not stats.dead_letters and not stats.rejected
    return run_id, snapshot(deps, run_id)


def test_campaign_runs_to_the_approval_queue_with_no_tokens_on_anti_icp(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    run_id, state = run_campaign(deps)
    assert state["run"] == {"status": "completed", "contacts_total": 36, "contacts_done": 36}
    calls = llm_calls(deps)
    # CONST-002: the 8 anti-ICP contacts cost no LLM call at all
    assert calls["AGT-003"] == calls["AGT-004"] == 36 - len(ANTI_ICP)
    by_id = {r["external_id"]: r for r in state["scored"]}
    for external_id, rules in ANTI_ICP.items():
        assert by_id[external_id]["icp_score"] == 0
        assert by_id[external_id]["icp_disqualifiers"] == rules
    qualified = [r for r in state["scored"] if r["icp_recommendation"] == "qualify"]
    assert calls["AGT-005"] == len(state["items"]) > 0
    assert calls["AGT-005"] <= len(qualified)  # qualified without signals end as missing data
    with deps.db.transaction(ORG) as cur:
        payloads = fetch_all(cur, "SELECT payload FROM approval_items WHERE run_id = %s", (run_id,))
    for p in (r["payload"] for r in payloads):
        assert {"subject", "body", "angle_used", "signal_referenced", "contact_id"} <= set(p)
        assert p["angle_used"] == "Signal"


@pytest.mark.covers("KC-02", "KC-03", "KC-04", "KC-07", "KC-08")
def test_each_agent_is_grounded_in_its_own_kc_domains(testdb: PgDB) -> None:
    """What each specialist's prompt holds from the demo's Knowledge Core, through the real
    flows: AGT-003 the buyer personas (KC-03), AGT-004 the ICP rubric (KC-02), AGT-005 its
    exemplars, objections and brand voice (KC-08, KC-04, KC-07), and nothing of another
    agent's domains."""
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    settings = Settings.from_env({})
    base = llm_from_settings(settings, db)
    recorder = Recorder(base.chat)
    llm = dataclasses.replace(base, chat=recorder, runner=StructuredRunner(recorder))
    deps = local_deps(settings, db, InlineTransport(), llm, knowledge)
    run_campaign(deps)
    titles = {d.title: d.domain for d in kc_documents()}
    seen: dict[str, set[str]] = {}
    for request in recorder.requests:
        agent = request.metadata["agent_id"]
        prompt = "\n".join(m.content for m in request.messages)
        found = [
            (domain, title.strip('"'))
            for domain, title in re.findall(
                r' source=kc domain=(KC-\d\d) title=("[^"]*"|[^\s>]+)', prompt
            )
        ]
        assert found, f"an {agent} call without Knowledge Core grounding"
        assert all(titles[title] == domain for domain, title in found)  # a demo document's
        seen.setdefault(agent, set()).update(domain for domain, _ in found)
    assert seen["AGT-003"] == {"KC-03"} and seen["AGT-004"] == {"KC-02"}
    assert seen["AGT-005"] == {"KC-08", "KC-04", "KC-07"}


def test_every_message_delivered_three_times_has_its_effects_once(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    run_id, state = run_campaign(deps, duplicates=3)
    assert state["run"] == {"status": "completed", "contacts_total": 36, "contacts_done": 36}
    calls = llm_calls(deps)
    assert calls["AGT-003"] == calls["AGT-004"] == 36 - len(ANTI_ICP)
    assert calls["AGT-005"] == len(state["items"]) == len(set(state["items"]))
    with deps.db.transaction(ORG) as cur:
        steps = fetch_all(cur, "SELECT step_key FROM run_steps WHERE run_id = %s", (run_id,))
    assert sum(s["step_key"].startswith("done:") for s in steps) == 36


@pytest.mark.parametrize(
    "point",
    ["prospect-enrichment.after_step", "qualification.after_step", "message-generator.after_step"],
)
def test_a_crash_after_each_step_recomputes_nothing(testdb: PgDB, point: str) -> None:
    deps = make_deps(testdb, Faults(frozenset({point})))
    campaign_id = all_contacts_campaign(deps)
    run_id = campaign.launch(deps, ORG, campaign_id)
    stats = run_until_idle(deps, deps.transport)
    assert stats.retried > 0  # the injected crashes happened and were redelivered
    state = snapshot(deps, run_id)
    assert state["run"]["status"] == "completed" and state["run"]["contacts_done"] == 36
    calls = llm_calls(deps)
    # one LLM call per contact per agent, crash or not
    assert calls["AGT-003"] == calls["AGT-004"] == 36 - len(ANTI_ICP)
    assert calls["AGT-005"] == len(state["items"]) == len(set(state["items"]))


def test_circuit_breaker_pauses_blocks_sends_and_resume_completes(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SENTRY_RELEASE", "test")  # else the SDK runs git for one
    with SentryServer() as sentry, reporting_to(sentry):
        _breaker_pauses_blocks_sends_and_resume_completes(testdb, sentry)


def _breaker_pauses_blocks_sends_and_resume_completes(testdb: PgDB, sentry: SentryServer) -> None:
    deps = make_deps(testdb)
    run_id, _ = run_campaign(deps)
    with deps.db.transaction(ORG) as cur:
        items = fetch_all(
            cur, "SELECT id FROM approval_items WHERE run_id = %s ORDER BY id", (run_id,)
        )
    assert len(items) >= 12
    for item in items[:-1]:
        approval.decide(deps, ORG, item["id"], "approve", actor=approval.Actor("founder", "ui"))
    with deps.db.transaction(ORG) as cur:
        outbox = fetch_all(cur, "SELECT id, status FROM outbox ORDER BY id")
    assert {o["status"] for o in outbox} == {"queued"}
    # 10 delivered, then bounces until the 5% threshold trips
    outcomes = ["delivered"] * 9 + ["bounced"] * 2
    results = [
        delivery.record(deps, ORG, o["id"], event, f"evt-{i}")
        for i, (o, event) in enumerate(zip(outbox, outcomes, strict=False))
    ]
    assert any(r.get("paused") for r in results)
    # The trip is reported (seed §8.2) once, by the event that tripped it, as its category.
    flush_telemetry()
    (trip,) = sentry.events()
    assert trip["tags"]["colony.category"] == "circuit_breaker"
    assert trip["fingerprint"] == ["colony", "circuit_breaker", "tripped"]
    assert trip["message"] == "circuit breaker tripped: a campaign was paused"
    campaign_id = status_campaign(deps, run_id)
    assert {k: trip["tags"].get(k) for k in ("org_id", "agent_id", "campaign_id")} == {
        "org_id": ORG,
        "agent_id": "AGT-002",
        "campaign_id": campaign_id,
    }
    with deps.db.transaction(ORG) as cur:
        status = fetch_one(
            cur,
            "SELECT c.status, r.status AS run FROM campaigns c"
            " JOIN campaign_runs r ON r.campaign_id = c.id WHERE r.id = %s",
            (run_id,),
        )
        held = fetch_all(cur, "SELECT status FROM outbox WHERE status = 'queued'")
    # the run had completed before the bounces, so only the campaign pauses; sends stop
    assert status["status"] == "paused" and not held
    # an approval while paused is held back, not sent
    approval.decide(deps, ORG, items[-1]["id"], "approve", actor=approval.Actor("founder", "ui"))
    with deps.db.transaction(ORG) as cur:
        last = fetch_one(
            cur, "SELECT id, status FROM outbox WHERE approval_item_id = %s", (items[-1]["id"],)
        )
    assert last["status"] == "blocked"
    blocked_id = last["id"]
    # the same delivery event again changes nothing
    assert delivery.record(deps, ORG, outbox[0]["id"], "delivered", "evt-0") == {"duplicate": True}
    # a late "delivered" never erases a bounce (the breaker would forget it)
    bounced = outbox[9]["id"]
    late = delivery.record(deps, ORG, bounced, "delivered", "evt-late")
    assert late["ignored"] == "delivered" and late["status"] == "bounced"
    # nothing resumes it by itself (issue 39): a person does, and that schedules one resume,
    # named by the pause, due now
    resumes = [t for t in deps.transport.tasks.values() if t.target == "campaign-resume"]
    assert resumes == []
    breaker.resume(deps, ORG, "campaign", campaign_id, "founder", "ui")
    resumes = [t for t in deps.transport.tasks.values() if t.target == "campaign-resume"]
    assert len(resumes) == 1
    task = resumes[0]
    assert task.delay_seconds == 0
    # every message approved while the campaign ran went to the send step; the blocked one not
    sends = {t.task_id for t in deps.transport.tasks.values() if t.target == "send"}
    assert len(sends) == len(deps.transport.tasks) - 1 and f"send-{blocked_id}" not in sends
    with deps.db.transaction(ORG) as cur:
        blocked = {
            r["id"] for r in fetch_all(cur, "SELECT id FROM outbox WHERE status = 'blocked'")
        }
    assert blocked_id in blocked
    resumed = campaign.resume(deps, EVENT_ADAPTER.validate_json(task.body), task.task_id)
    # the resume hands every unblocked message to the send step, under a name of its own
    after = {t.task_id for t in deps.transport.tasks.values() if t.target == "send"} - sends
    assert {name.split("-resume-")[0].removeprefix("send-") for name in after} == blocked
    assert resumed["campaign_id"] == status_campaign(deps, run_id)
    with deps.db.transaction(ORG) as cur:
        assert (
            fetch_one(cur, "SELECT status FROM campaigns WHERE id = %s", (resumed["campaign_id"],))[
                "status"
            ]
            == "active"
        )
        assert not fetch_all(cur, "SELECT 1 FROM outbox WHERE status = 'blocked'")
    # rates are judged again from the resume on: old bounces do not re-trip it at once
    again = delivery.record(deps, ORG, outbox[0]["id"], "replied", "evt-after")
    assert not again.get("paused")
    flush_telemetry()
    assert len(sentry.events()) == 1  # the events after the trip reported nothing more


def test_a_paused_run_does_no_work_and_resume_completes_without_recomputing(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    campaign_id = all_contacts_campaign(deps)
    run_id = campaign.launch(deps, ORG, campaign_id)
    # deliver only the start: the handoffs to AGT-003 are now queued
    start = deps.transport.pending.popleft()
    PUBSUB_HANDLERS["campaign"](deps, EVENT_ADAPTER.validate_json(start.data), start.message_id)
    # let a few contacts through enrichment, then pause the run (as the breaker does)
    for _ in range(5):
        message = deps.transport.pending.popleft()
        PUBSUB_HANDLERS["enrichment"](
            deps, EVENT_ADAPTER.validate_json(message.data), message.message_id
        )
    with deps.db.transaction(ORG) as cur:
        cur.execute("UPDATE campaign_runs SET status = 'paused' WHERE id = %s", (run_id,))
        cur.execute("UPDATE campaigns SET status = 'paused' WHERE id = %s", (campaign_id,))
    calls_at_pause = llm_calls(deps)
    run_until_idle(deps, deps.transport)  # everything still queued is skipped
    assert llm_calls(deps) == calls_at_pause
    resume = CampaignResume(org_id=ORG, campaign_id=campaign_id, run_id=run_id)
    result = campaign.resume(deps, resume, "resume-1")
    assert result["redispatched"] == 36 - len(ANTI_ICP) and result["resumed_runs"] == [run_id]
    # a duplicate resume re-dispatches nothing
    assert campaign.resume(deps, resume, "resume-2")["redispatched"] == 0
    run_until_idle(deps, deps.transport)
    state = snapshot(deps, run_id)
    assert state["run"]["status"] == "completed" and state["run"]["contacts_done"] == 36
    calls = llm_calls(deps)
    assert calls["AGT-003"] == calls["AGT-004"] == 36 - len(ANTI_ICP)  # nothing recomputed


def test_approval_is_idempotent_and_conflicts_are_refused(testdb: PgDB) -> None:
    from colony.errors import Conflict, NotFound, ValidationFailed

    deps = make_deps(testdb)
    run_id, _ = run_campaign(deps)
    with deps.db.transaction(ORG) as cur:
        first, second = fetch_all(
            cur,
            "SELECT id, payload FROM approval_items WHERE run_id = %s ORDER BY id LIMIT 2",
            (run_id,),
        )
    assert approval.decide(deps, ORG, first["id"], "approve", actor=approval.Actor("u", "ui"))[
        "changed"
    ]
    assert not approval.decide(deps, ORG, first["id"], "approve", actor=approval.Actor("u", "ui"))[
        "changed"
    ]
    with pytest.raises(Conflict):
        approval.decide(deps, ORG, first["id"], "reject", actor=approval.Actor("u", "ui"))
    with pytest.raises(NotFound):
        approval.decide(deps, "org_other", first["id"], "approve", actor=approval.Actor("u", "ui"))
    with pytest.raises(ValidationFailed, match="CONST-006"):
        approval.decide(
            deps,
            ORG,
            second["id"],
            "edit",
            actor=approval.Actor("u", "ui"),
            edited={"subject": "one two three four five six seven eight nine"},
        )
    edited = approval.decide(
        deps,
        ORG,
        second["id"],
        "edit",
        actor=approval.Actor("u", "ui"),
        edited={"subject": "A shorter subject"},
    )
    assert edited["status"] == "applied"
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(cur, "SELECT subject FROM outbox ORDER BY created_at")
    assert [r["subject"] for r in rows][-1] == "A shorter subject" and len(rows) == 2
    assert json.dumps(second["payload"])  # the original draft is kept alongside the edit


def status_campaign(deps: Deps, run_id: str) -> str:
    with deps.db.transaction(ORG) as cur:
        return fetch_one(cur, "SELECT campaign_id FROM campaign_runs WHERE id = %s", (run_id,))[
            "campaign_id"
        ]


def test_a_contact_whose_answer_stays_invalid_ends_the_chain_and_the_run_completes(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    from colony.errors import OutputInvalid

    deps = make_deps(testdb)

    def invalid(*args, **kwargs):
        raise OutputInvalid("qualification_score stayed invalid after one repair")

    for specialist in ("enrichment", "qualification", "message_generator"):
        monkeypatch.setattr(f"colony.flows.campaigns.{specialist}.call_agent", invalid)
    run_id, state = run_campaign(deps)
    assert state["run"]["status"] == "completed" and state["run"]["contacts_done"] == 36
    with deps.db.transaction(ORG) as cur:
        failed = fetch_all(
            cur,
            "SELECT 1 FROM run_steps WHERE run_id = %s"
            " AND output->>'outcome' = 'failed:output_invalid'",
            (run_id,),
        )
    assert len(failed) == 36 - len(ANTI_ICP)


DONE_STEPS = "SELECT step_key, output FROM run_steps WHERE run_id = %s AND status = 'done'"


def _push(sent: Sent, attempt: int) -> dict:
    """``sent`` as Pub/Sub pushes it on delivery attempt ``attempt`` (dead-letter policy on)."""
    data = base64.b64encode(sent.data).decode()
    message = {"data": data, "messageId": sent.message_id, "attributes": dict(sent.attributes)}
    subscription = "projects/colony-test/subscriptions/colony-enrichment-push"
    return {"message": message, "subscription": subscription, "deliveryAttempt": attempt}


def test_a_missing_model_key_is_retried_and_never_fails_the_contact(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real enrichment function (AGT-003) with OpenAI chosen and no key: a ConfigError,
    ours to fix, not the contact's. Every delivery, the last included, is answered 500 (Pub/Sub
    retries, then dead-letters), none is recorded as a rejection, and the contact is not
    counted as done with ``failed:config_error``: like an upstream failure, it stays pending.
    Once the key is there, the same message delivered again enriches the contact."""
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    launcher = InlineTransport()
    keyed = build_deps(testdb.settings, db=db, transport=launcher, knowledge=knowledge)
    with db.transaction(ORG) as cur:
        (contact,) = fetch_all(cur, "SELECT id FROM contacts WHERE external_id = 'P-001'")
    campaign_id = campaign.create_campaign(
        keyed, ORG, name="no key", angle="Signal", tier="T1", contact_ids=[contact["id"]]
    )
    run_id = campaign.launch(keyed, ORG, campaign_id)
    start = launcher.pending.popleft()
    PUBSUB_HANDLERS["campaign"](keyed, EVENT_ADAPTER.validate_json(start.data), start.message_id)
    (handoff,) = launcher.pending  # P-001 is not anti-ICP: handed to AGT-003
    assert handoff.topic == FUNCTIONS["enrichment"].topic
    launcher.pending.clear()

    def steps() -> dict[str, object]:
        """The run's finished steps: ``done:<contact>`` holds a contact's final outcome."""
        with db.transaction(ORG) as cur:
            rows = fetch_all(cur, DONE_STEPS, (run_id,))
        return {r["step_key"]: r["output"] for r in rows}

    keyless = dataclasses.replace(testdb.settings, llm_provider="openai", openai_api_key=None)
    rejections = MemoryRejections()
    parts = {"db": db, "knowledge": knowledge, "rejections": rejections}
    set_deps_for_tests(build_deps(keyless, transport=InlineTransport(), **parts))
    try:
        client = registered_app("enrichment", monkeypatch)
        limit = registered_topic(handoff.topic).max_delivery_attempts
        for attempt in range(1, limit + 1):
            response = client.post("/", json=_push(handoff, attempt))
            assert response.status_code == 500, f"attempt {attempt}: {response.text}"
            assert response.get_json()["error"]["code"] == "config_error"
            assert rejections.rejections == []
            assert f"done:{contact['id']}" not in steps()
            assert snapshot(keyed, run_id)["run"]["contacts_done"] == 0

        # The key is configured: the dead-lettered message, replayed, goes through.
        set_deps_for_tests(build_deps(testdb.settings, transport=launcher, **parts))
        response = client.post("/", json=_push(handoff, 1))
        assert response.status_code in (200, 204), response.text
    finally:
        set_deps_for_tests(None)
    done = steps()
    assert f"enrich:{contact['id']}" in done and f"done:{contact['id']}" not in done
    assert [s.topic for s in launcher.pending] == [FUNCTIONS["qualification"].topic]
    assert rejections.rejections == [] and snapshot(keyed, run_id)["run"]["status"] == "running"
