"""A model call the provider rate-limits for longer than a short wait is put back, not slept
through (issue 15 item 3): the push is acknowledged, a Cloud Tasks task brings the same event
back onto its topic after the provider's ``Retry-After``, and the contact then goes on.

Real parts: the qualification and campaign-resume functions loaded from their real
``main.py`` by functions-framework, the OpenAI SDK (the production adapter) over HTTP to the
local wire stand-in answering 429 with ``Retry-After: 90``, the campaign chain's flows on
embedded PostgreSQL. Stood in: Pub/Sub and Cloud Tasks (``InlineTransport``, which names and
keeps tasks as the conformance suite holds every transport to), the OpenAI API.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.contracts.events import EVENT_ADAPTER
from colony.flows.campaigns import campaign
from colony.flows.campaigns.campaign import done_key, step_key
from colony.flows.handlers import PUBSUB_HANDLERS
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.demo import load_demo
from colony.registry.functions import FUNCTIONS, QUEUES, REDELIVER_QUEUE
from colony.registry.functions import topic as registered_topic
from colony.runtime.deps import set_deps_for_tests
from colony.settings import Settings
from colony.store import fetch_all
from colony.testing.inline import (
    TOPIC_FUNCTIONS,
    InlineTransport,
    Sent,
    local_deps,
    run_until_idle,
)
from colony.testing.wire import WireServer
from tests.apps import registered_app
from tests.conftest import PgDB

ORG = "org_zoomprop_demo"
QUALIFICATION = FUNCTIONS["qualification"].topic


def push(sent: Sent) -> dict[str, Any]:
    """``sent`` as Pub/Sub pushes it."""
    data = base64.b64encode(sent.data).decode()
    message = {"data": data, "messageId": sent.message_id, "attributes": dict(sent.attributes)}
    return {"message": message, "subscription": "projects/p/subscriptions/s", "deliveryAttempt": 1}


def test_a_long_retry_after_puts_the_event_back_instead_of_sleeping(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    transport = InlineTransport()
    with WireServer() as wire:
        settings = Settings.from_env(
            {
                "COLONY_LLM_PROVIDER": "openai",
                "OPENAI_API_KEY": "sk-test",
                "COLONY_OPENAI_BASE_URL": wire.openai_base_url,
            }
        )
        deps = local_deps(settings, db, transport, llm_from_settings(settings, db), knowledge)
        with db.transaction(ORG) as cur:
            (contact,) = fetch_all(cur, "SELECT id FROM contacts WHERE external_id = 'P-001'")
        campaign_id = campaign.create_campaign(
            deps, ORG, name="Rate limited", angle="Signal", tier="T1", contact_ids=[contact["id"]]
        )
        run_id = campaign.launch(deps, ORG, campaign_id)
        # through enrichment, up to the qualification handoff
        while transport.pending and transport.pending[0].topic != QUALIFICATION:
            sent = transport.pending.popleft()
            handler = PUBSUB_HANDLERS[TOPIC_FUNCTIONS[sent.topic]]
            handler(deps, EVENT_ADAPTER.validate_json(sent.data), sent.message_id)
        handoff = transport.pending.popleft()
        assert handoff.topic == QUALIFICATION and not transport.pending

        set_deps_for_tests(deps)
        try:
            qualification = registered_app("qualification", monkeypatch)
            wire.fail(429, retry_after_ms=None, headers={"Retry-After": "90"})
            before = len(wire.requests_to("openai.chat.completions"))  # AGT-003's
            answer = qualification.post("/", json=push(handoff))
            assert answer.status_code in (200, 204), answer.text  # acknowledged, not retried
            asked = len(wire.requests_to("openai.chat.completions")) - before
            assert asked == 1  # one request: nothing slept, nothing retried in-process
            (task,) = transport.tasks.values()
            assert (task.queue, task.target, task.delay_seconds) == (
                REDELIVER_QUEUE,
                QUEUES[REDELIVER_QUEUE].target,
                90.0,
            )
            # the same push again (Pub/Sub redelivers at least once): one task, not two
            wire.fail(429, retry_after_ms=None, headers={"Retry-After": "90"})
            qualification.post("/", json=push(handoff))
            assert len(transport.tasks) == 1

            # 90 s on, Cloud Tasks calls campaign-resume, which publishes the event again
            resume = registered_app("campaign-resume", monkeypatch)
            done = resume.post("/", data=task.body, headers={"Content-Type": "application/json"})
            assert done.status_code == 200, done.get_json()
            (again,) = transport.pending
            assert again.topic == QUALIFICATION
            assert json.loads(again.data) == json.loads(handoff.data)  # the same event
        finally:
            set_deps_for_tests(None)
        run_until_idle(deps, transport)  # the provider answers now: the contact goes on
    with db.transaction(ORG) as cur:
        steps = {
            r["step_key"]
            for r in fetch_all(
                cur,
                "SELECT step_key FROM run_steps WHERE run_id = %s AND status = 'done'",
                (run_id,),
            )
        }
    assert step_key("AGT-004", contact["id"]) in steps and done_key(contact["id"]) in steps


def test_only_model_topics_and_the_tasks_own_org_are_redelivered(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    transport = InlineTransport()
    set_deps_for_tests(local_deps(Settings.from_env({}), testdb.app(), transport))
    try:
        resume = registered_app("campaign-resume", monkeypatch)
        event = {"kind": "campaign.start", "org_id": ORG, "campaign_id": "c1", "run_id": "r1"}
        elsewhere = {"kind": "redeliver", "org_id": ORG, "topic": "colony-campaign", "event": event}
        refused = resume.post("/", json=elsewhere)
        assert refused.status_code == 400 and "not redelivered" in refused.text
        other_org = {
            "kind": "redeliver",
            "org_id": "org_other",
            "topic": QUALIFICATION,
            "event": event,
        }
        refused = resume.post("/", json=other_org)
        assert refused.status_code == 400 and "org" in refused.get_json()["error"]["message"]
        assert transport.pending == type(transport.pending)()  # nothing published
    finally:
        set_deps_for_tests(None)


def test_a_step_held_by_a_dead_instance_is_put_back_on_the_last_attempt(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the chaos soak: an instance killed mid-step keeps the step under its lease
    (ten minutes), Pub/Sub's five attempts of the event all find it busy within about two
    and a half, and the event was dead-lettered: the contact never went on. Now every
    attempt but the last is nacked (the holder may be alive and about to finish), and the
    last puts the event back for when the lease lapses; the redelivery then takes the step
    over and the contact goes on."""
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    transport = InlineTransport()
    settings = Settings.from_env({})
    deps = local_deps(settings, db, transport, llm_from_settings(settings, db), knowledge)
    with db.transaction(ORG) as cur:
        (contact,) = fetch_all(cur, "SELECT id FROM contacts WHERE external_id = 'P-001'")
    campaign_id = campaign.create_campaign(
        deps, ORG, name="Dead holder", angle="Signal", tier="T1", contact_ids=[contact["id"]]
    )
    run_id = campaign.launch(deps, ORG, campaign_id)
    while transport.pending and transport.pending[0].topic != QUALIFICATION:
        sent = transport.pending.popleft()
        handler = PUBSUB_HANDLERS[TOPIC_FUNCTIONS[sent.topic]]
        handler(deps, EVENT_ADAPTER.validate_json(sent.data), sent.message_id)
    handoff = transport.pending.popleft()
    key = step_key("AGT-004", contact["id"])
    with db.transaction(ORG) as cur:  # what a SIGKILLed holder leaves: a live lease
        cur.execute(
            "INSERT INTO run_steps (org_id, run_id, step_key, status, claim, lease_until)"
            " VALUES (%s, %s, %s, 'running', 'killed-instance', now() + interval '600 s')",
            (ORG, run_id, key),
        )
    limit = registered_topic(QUALIFICATION).max_delivery_attempts
    set_deps_for_tests(deps)
    try:
        qualification = registered_app("qualification", monkeypatch)
        early = qualification.post("/", json={**push(handoff), "deliveryAttempt": 1})
        assert early.status_code == 503 and not transport.tasks  # nacked: Pub/Sub retries
        last = qualification.post("/", json={**push(handoff), "deliveryAttempt": limit})
        assert last.status_code in (200, 204), last.text  # acknowledged, put back
        (task,) = transport.tasks.values()
        assert task.queue == REDELIVER_QUEUE and 595 <= task.delay_seconds <= 610
        with db.transaction(ORG) as cur:  # ten minutes on, the dead holder's lease lapses
            cur.execute(
                "UPDATE run_steps SET lease_until = now() - interval '1 s'"
                " WHERE run_id = %s AND step_key = %s",
                (run_id, key),
            )
        resume = registered_app("campaign-resume", monkeypatch)
        done = resume.post("/", data=task.body, headers={"Content-Type": "application/json"})
        assert done.status_code == 200, done.get_json()
        (again,) = transport.pending
        assert again.topic == QUALIFICATION
    finally:
        set_deps_for_tests(None)
    run_until_idle(deps, transport)
    with db.transaction(ORG) as cur:
        steps = {
            r["step_key"]
            for r in fetch_all(
                cur,
                "SELECT step_key FROM run_steps WHERE run_id = %s AND status = 'done'",
                (run_id,),
            )
        }
    assert key in steps and done_key(contact["id"]) in steps


def test_only_topics_the_redelivery_publishes_on_are_put_back() -> None:
    """A busy step on the campaign start's topic is not put back (``campaign-resume`` does not
    publish there: the task would be refused and the acknowledged event lost); it is nacked
    as before. The model-calling agents' topics are."""
    from colony.runtime.redelivery import can_put_back

    assert can_put_back(QUALIFICATION)
    assert not can_put_back(FUNCTIONS["campaign"].topic or "")
