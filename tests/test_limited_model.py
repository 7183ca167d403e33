"""Model calls through the shared limiter (issue 38 item 1): a call over its org's share waits
as a scheduled retry (acknowledged, not slept, not a failure, not a dead letter), and a
provider's 429 slows every org's share of that model.

Real parts: the qualification and campaign-resume functions from their real ``main.py``
(functions-framework), the OpenAI SDK (the production adapter) over HTTP to the local wire
stand-in, the campaign chain's flows and the limiter on embedded PostgreSQL. Stood in:
Pub/Sub and Cloud Tasks (``InlineTransport``), the OpenAI API.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.contracts.events import EVENT_ADAPTER
from colony.errors import ConfigError, DatabaseError
from colony.flows.campaigns import campaign
from colony.flows.handlers import PUBSUB_HANDLERS
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.llm.limited import LimitedChatModel, model_key
from colony.local.demo import load_demo
from colony.ports import Message, ModelRequest
from colony.registry.functions import FUNCTIONS, REDELIVER_QUEUE
from colony.registry.limits import load_limits
from colony.runtime import delivery
from colony.runtime.deps import set_deps_for_tests
from colony.runtime.edge.responses import error_reply
from colony.runtime.limiter import USE, Limit, Limiter, RateWait
from colony.settings import Settings
from colony.store import fetch_all, fetch_value
from colony.testing.inline import TOPIC_FUNCTIONS, InlineTransport, local_deps
from colony.testing.wire import WireServer
from tests.apps import registered_app
from tests.conftest import PgDB
from tests.test_redelivery import push

ORG = "org_zoomprop_demo"
QUALIFICATION = FUNCTIONS["qualification"].topic
MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini")


def limits_file(tmp_path: Path, per_minute: float) -> Path:
    path = tmp_path / "limits.json"
    rates = {m: {"requests_per_minute": per_minute} for m in MODELS}
    path.write_text(json.dumps({"models": rates}))
    return path


def openai_settings(wire: WireServer, limits: Path) -> Settings:
    """The production OpenAI adapter against the stand-in, with ``limits`` as the limits file."""
    return Settings.from_env(
        {
            "COLONY_LLM_PROVIDER": "openai",
            "OPENAI_API_KEY": "sk-test",
            "COLONY_OPENAI_BASE_URL": wire.openai_base_url,
            "COLONY_LIMITS_FILE": str(limits),
        }
    )


def test_a_call_over_its_share_waits_as_a_scheduled_retry(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    with WireServer() as wire:
        settings = openai_settings(wire, limits_file(tmp_path, 60))  # a burst of 3 a model
        llm = llm_from_settings(settings, db)
        transport = InlineTransport()
        assert isinstance(llm.chat, LimitedChatModel)
        deps = local_deps(settings, db, transport, llm, knowledge)
        with db.transaction(ORG) as cur:
            (contact,) = fetch_all(cur, "SELECT id FROM contacts WHERE external_id = 'P-001'")
        campaign_id = campaign.create_campaign(
            deps, ORG, name="Fair", angle="Signal", tier="T1", contact_ids=[contact["id"]]
        )
        campaign.launch(deps, ORG, campaign_id)
        while transport.pending and transport.pending[0].topic != QUALIFICATION:
            sent = transport.pending.popleft()
            handler = PUBSUB_HANDLERS[TOPIC_FUNCTIONS[sent.topic]]
            handler(deps, EVENT_ADAPTER.validate_json(sent.data), sent.message_id)
        handoff = transport.pending.popleft()
        # another instance of the org's campaign took what is left of the model's burst
        model = llm.model_for("AGT-004")
        other = Limiter(testdb.app())
        limit = Limit(model_key(model), 60)
        while True:
            try:
                other.acquire(limit, ORG)
            except RateWait:
                break
        set_deps_for_tests(deps)
        try:
            qualification = registered_app("qualification", monkeypatch)
            before = len(wire.requests_to("openai.chat.completions"))
            answer = qualification.post("/", json=push(handoff))
            assert answer.status_code in (200, 204), answer.text  # acknowledged
            assert len(wire.requests_to("openai.chat.completions")) == before  # nothing sent
            (task,) = transport.tasks.values()
            assert task.queue == REDELIVER_QUEUE
            # booked after the refusal above: at most two requests' time at 95 % of 60 a minute
            assert 0 < task.delay_seconds <= 2 * 60 / (60 * USE) + 0.5
            resume = registered_app("campaign-resume", monkeypatch)
            done = resume.post("/", data=task.body, headers={"Content-Type": "application/json"})
            assert done.status_code == 200, done.get_json()
            (again,) = transport.pending
            assert json.loads(again.data) == json.loads(handoff.data)  # the same work, later
        finally:
            set_deps_for_tests(None)
    owner = testdb.owner_connection()
    cur = owner.cursor()
    assert fetch_value(cur, "SELECT count(*) FROM rejected_deliveries") == 0
    assert fetch_value(cur, "SELECT count(*) FROM dead_letters") == 0
    owner.close()


def orgs(testdb: PgDB, *names: str) -> None:
    def add(conn: Any) -> None:
        cur = conn.cursor()
        for name in names:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (name, name))
        conn.commit()

    testdb.as_owner(add)


def test_a_429_becomes_a_wait_and_slows_every_org(testdb: PgDB, tmp_path: Path) -> None:
    db = testdb.app()
    orgs(testdb, "org_a", "org_b")
    with WireServer() as wire:
        settings = openai_settings(wire, limits_file(tmp_path, 600))
        llm = llm_from_settings(settings, db)
        request = ModelRequest(
            model="gpt-4o",
            messages=(Message("user", "hello"),),
            output_name="missing_data",
            output_schema={"type": "object"},
            metadata={"org_id": "org_a", "agent_id": "AGT-004"},
        )
        wire.fail(429, retry_after_ms=None, headers={"Retry-After": "3"})
        with pytest.raises(RateWait) as waited:
            llm.chat.request(request)
        assert waited.value.retry_after == 3.0 and waited.value.key == "model:gpt-4o"
        # org_b's next call finds the model slowed for everyone: nothing for 3 s
        with pytest.raises(RateWait):
            llm.chat.request(replace(request, metadata={"org_id": "org_b", "agent_id": "AGT-004"}))
        assert len(wire.requests_to("openai.chat.completions")) == 1
    state = Limiter(db).state(Limit("model:gpt-4o", 600))
    assert state is not None and state["factor"] == 0.5 and state["throttled"] == 1


def test_a_chat_turn_is_answered_over_its_orgs_share(testdb: PgDB, tmp_path: Path) -> None:
    db = testdb.app()
    orgs(testdb, "org_a")
    with WireServer() as wire:
        llm = llm_from_settings(openai_settings(wire, limits_file(tmp_path, 60)), db)
        request = ModelRequest(
            model="gpt-4o",
            messages=(Message("user", "hello"),),
            output_name="missing_data",
            output_schema={"type": "object", "properties": {"kind": {"type": "string"}}},
            metadata={"org_id": "org_a", "agent_id": "AGT-001"},
        )
        for _ in range(3):  # the burst of 3 a minute's 60 allows
            llm.chat.request(request)
        with pytest.raises(RateWait):  # an agent's call waits its turn
            llm.chat.request(request)
        fragments: list[str] = []
        answered = llm.chat.stream(request, fragments.append)  # a person is waiting: answered
        assert answered.text and "".join(fragments) == answered.text
    assert len(wire.requests_to("openai.chat.completions")) == 4


def test_an_answered_call_settles_its_reservation(testdb: PgDB, tmp_path: Path) -> None:
    db = testdb.app()
    orgs(testdb, "org_a")
    path = tmp_path / "limits.json"
    path.write_text(
        json.dumps({"models": {"gpt-4o": {"requests_per_minute": 600, "tokens_per_minute": 6e4}}})
    )
    with WireServer() as wire:
        settings = openai_settings(wire, path)
        llm = llm_from_settings(settings, db)
        request = ModelRequest(
            model="gpt-4o",
            messages=(Message("user", "hello there"),),
            output_name="missing_data",
            output_schema={"type": "object", "properties": {"kind": {"type": "string"}}},
            max_output_tokens=4_000,
            metadata={"org_id": "org_a", "agent_id": "AGT-004"},
        )
        response = llm.chat.request(request)
    state = Limiter(db).state(Limit("model:gpt-4o", 600, 6e4))
    assert state is not None
    # 4,000 and more reserved, over the 3,000 burst: unsettled, the bucket would be in debt
    # (refilling 950 a second); settled, it holds the burst less what the call really used
    used = response.usage.tokens_in + response.usage.tokens_out
    assert 0 < used < 100
    assert (1 - USE) * 6e4 - used <= state["tokens"] <= (1 - USE) * 6e4


def test_a_limits_file_that_does_not_fit_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "limits.json"
    path.write_text(json.dumps({"models": {"gpt-4o": {"requests_per_minute": -1}}}))
    with pytest.raises(ConfigError, match=r"models 'gpt-4o' requests_per_minute"):
        load_limits(path)
    path.write_text(json.dumps({"sending": {"fax": {"requests_per_minute": 1}}}))
    with pytest.raises(ConfigError, match="unknown kinds 'fax'"):
        load_limits(path)
    assert load_limits(None).models == {}


def test_a_wait_on_the_last_delivery_attempt_gives_nothing_up() -> None:
    """The edge puts a waiting event back on its topic (a new message, attempt 1), so a flow
    must not count its contact as failed even when the wait came on the topic's last attempt."""
    waiting = RateWait("over its share", key="model:gpt-4o", retry_after=3.0)
    with delivery.attempt(5, 5):
        assert delivery.final_reason(waiting) is None
        assert delivery.final_reason(DatabaseError("down")) == (
            "gave up after 5 delivery attempts: DatabaseError (database_error)"
        )


def test_an_http_function_answers_a_wait_503_with_its_retry_after() -> None:
    reply = error_reply(RateWait("over its share", key="model:gpt-4o", retry_after=2.2))
    assert reply.status_code == 503 and reply.headers["Retry-After"] == "3"
    assert reply.get_json()["error"]["code"] == "rate_wait"
