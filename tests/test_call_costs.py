"""What each model call cost, on its ``llm_calls`` row: cached tokens read from the providers'
own usage (through the official SDKs, against the wire stand-ins), the cost priced from the
table as the row is written (both ways a row is written: its own transaction, and a chat
turn's one statement), the campaign it was for, and the org's daily totals the rows add up to.
All on the real embedded PostgreSQL.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.gemini_chat import GeminiChatModel
from colony.adapters.openai_chat import OpenAIChatModel
from colony.contracts import QualificationScore
from colony.flows.chat import create_session, run_turn
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.llm.runner import StructuredRunner
from colony.observability.call_records import CallRecorder
from colony.observability.tracing import TracedChatModel
from colony.ports import LlmCallRecord, Message, ModelRequest
from colony.settings import Settings
from colony.store import Database, fetch_all
from colony.store.campaigns import campaigns
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.wire import (
    Route,
    WireServer,
    gemini_content_reply,
    gemini_content_stream,
    openai_chat_reply,
    openai_chat_stream,
)
from tests.conftest import PgDB
from tests.test_runner import VALID

pytestmark = [pytest.mark.usefixtures("no_ambient_config"), pytest.mark.covers("TECH-008")]

ORG = "org_costs"
ANSWER = VALID  # a qualification score the contract takes


@pytest.fixture
def db(testdb: PgDB) -> Database:
    db = testdb.app()
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Costs')", (ORG,))
    return db


def rows(db: Database, table: str = "llm_calls") -> list[dict[str, Any]]:
    columns = {
        "llm_calls": "agent_id, run_id, model, tokens_in, tokens_cached, tokens_out, cost_usd,"
        " campaign_id",
        "llm_usage_daily": "agent_id, campaign_id, model, calls, unpriced_calls, tokens_in,"
        " tokens_cached, tokens_out, cost_usd",
    }[table]
    with db.transaction(ORG) as cur:
        return fetch_all(cur, f"SELECT {columns} FROM {table} ORDER BY 1, 2, 3")


def campaign_run(db: Database, org: str, run_id: str) -> str:
    """A campaign of ``org`` with one run, ``run_id``; the campaign's id."""
    with db.transaction(org) as cur:
        campaign_id = campaigns.create(
            cur,
            org,
            name=f"Campaign of {run_id}",
            angle="Signal",
            tier="T1",
            bounce_threshold=0.05,
            complaint_threshold=0.003,
        )
        campaigns.start_run(cur, run_id, org, campaign_id, "running", 0)
    return campaign_id


def request(model: str, run_id: str | None = "rec:r1") -> ModelRequest:
    return ModelRequest(
        model=model,
        messages=(Message("system", "Score."), Message("user", "Acme.")),
        output_name="qualification_score",
        output_schema=QualificationScore.model_json_schema(),
        metadata={"org_id": ORG, "agent_id": "AGT-004", "run_id": run_id},
    )


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_cached_tokens_and_the_cost_reach_the_calls_row(
    db: Database, server: WireServer, provider: str
) -> None:
    """3,000 prompt tokens of which the provider's cache served 1,000, and 500 out: the
    adapter reads the cached count from the provider's own usage, the row is priced at the
    cached rate for those and the input rate for the rest."""
    model: Any
    if provider == "openai":
        server.script(
            openai_chat_reply(
                json.dumps(ANSWER),
                model="gpt-4o-2024-08-06",  # OpenAI answers with the dated snapshot
                prompt_tokens=3_000,
                cached_tokens=1_000,
                completion_tokens=500,
            )
        )
        model = OpenAIChatModel(api_key="sk-test", base_url=server.openai_base_url)
        expected = Decimal("0.01125")  # 2,000 x 2.50 + 1,000 x 1.25 + 500 x 10.00, per million
    else:
        server.script(
            gemini_content_reply(
                json.dumps(ANSWER),
                model_version="gemini-2.5-pro",
                prompt_tokens=3_000,
                cached_tokens=1_000,
                candidates_tokens=500,
            )
        )
        model = GeminiChatModel(api_key="g-test", base_url=server.gemini_base_url)
        expected = Decimal("0.007625")  # 2,000 x 1.25 + 1,000 x 0.125 + 500 x 10.00
    try:
        response = TracedChatModel(model, recorder=CallRecorder(db)).request(request("m"))
    finally:
        model.close()
    assert response.usage.tokens_cached == 1_000
    [row] = rows(db)
    assert (row["tokens_in"], row["tokens_cached"], row["tokens_out"]) == (3_000, 1_000, 500)
    assert row["cost_usd"] == expected
    [day] = rows(db, "llm_usage_daily")
    assert (day["calls"], day["unpriced_calls"], day["cost_usd"]) == (1, 0, expected)
    assert day["tokens_cached"] == 1_000


def test_a_model_without_a_price_is_recorded_unknown_and_counted_unpriced(db: Database) -> None:
    recorder = CallRecorder(db)
    base = LlmCallRecord(ORG, "AGT-004", "rec:r1", "gpt-test", (), 100, 20, latency_ms=5.0)
    recorder.record(base)
    recorder.record(replace(base, model="gpt-4o-mini", tokens_cached=40))
    calls = {r["model"]: r for r in rows(db)}
    assert calls["gpt-test"]["cost_usd"] is None  # unknown, not 0
    # 60 x 0.15 + 40 x 0.075 + 20 x 0.60 per million
    assert calls["gpt-4o-mini"]["cost_usd"] == Decimal("0.000024")
    daily = {r["model"]: r for r in rows(db, "llm_usage_daily")}
    assert (daily["gpt-test"]["unpriced_calls"], daily["gpt-test"]["cost_usd"]) == (1, 0)
    assert daily["gpt-4o-mini"]["unpriced_calls"] == 0


def test_a_call_is_attributed_to_the_campaign_of_the_run_it_names(db: Database) -> None:
    campaign_id = campaign_run(db, ORG, "run-costs-1")
    recorder = CallRecorder(db)
    base = LlmCallRecord(ORG, "AGT-005", "run-costs-1", "gpt-4o", (), 1_000, 100, latency_ms=5.0)
    recorder.record(base)
    recorder.record(replace(base, agent_id="AGT-003"))
    recorder.record(replace(base, run_id="rec:r1", agent_id="AGT-006"))  # no campaign run
    recorder.record(replace(base, run_id=None, agent_id="AGT-010"))
    by_agent = {r["agent_id"]: r["campaign_id"] for r in rows(db)}
    assert by_agent == {
        "AGT-003": campaign_id,
        "AGT-005": campaign_id,
        "AGT-006": None,
        "AGT-010": None,
    }
    daily = rows(db, "llm_usage_daily")
    assert {(r["agent_id"], r["campaign_id"], r["calls"]) for r in daily} == {
        ("AGT-003", campaign_id, 1),
        ("AGT-005", campaign_id, 1),
        ("AGT-006", None, 1),
        ("AGT-010", None, 1),
    }
    assert sum(r["cost_usd"] for r in daily) == 4 * Decimal("0.0035")


def test_another_orgs_run_id_names_no_campaign_here(db: Database) -> None:
    """The lookup runs under the writing org's row-level security: a run id of another org
    (however it got into a call's metadata) does not attribute the call to its campaign."""
    other = "org_costs_other"
    with db.transaction(other) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Other')", (other,))
    campaign_run(db, other, "run-theirs")
    CallRecorder(db).record(
        LlmCallRecord(ORG, "AGT-004", "run-theirs", "gpt-4o", (), 10, 1, latency_ms=5.0)
    )
    assert [r["campaign_id"] for r in rows(db)] == [None]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_chat_turns_streamed_call_is_priced_in_the_turns_own_statement(
    db: Database, provider: str
) -> None:
    """The chat turn keeps its calls' records for its next write (``ADD_MANY`` inside the
    event log's statement): they arrive priced, with the cached tokens the stream reported."""
    answer = json.dumps({"answer": "Three deals."})
    if provider == "openai":
        reply = openai_chat_stream(
            answer, model="gpt-4o", prompt_tokens=2_000, cached_tokens=1_024, completion_tokens=10
        )
        path = r"/v1/chat/completions"
        env = {"OPENAI_API_KEY": "sk-test"}
        expected = Decimal("0.00382")  # 976 x 2.50 + 1,024 x 1.25 + 10 x 10.00, per million
    else:
        reply = gemini_content_stream(
            answer,
            model_version="gemini-2.5-flash",
            prompt_tokens=2_000,
            cached_tokens=1_024,
            candidates_tokens=10,
        )
        path = r"/v1(?:alpha|beta)?/models/[^/:]+:streamGenerateContent"
        env = {"GEMINI_API_KEY": "g-test"}
        expected = Decimal("0.00034852")  # 976 x 0.30 + 1,024 x 0.03 + 10 x 2.50
    with WireServer() as server:
        answers = deque([reply])
        server.add_route(Route.of("test.answers", "POST", path, lambda _: answers.popleft()))
        base = {"openai": server.openai_base_url, "gemini": server.gemini_base_url}[provider]
        settings = Settings.from_env(
            {
                **env,
                "COLONY_LLM_PROVIDER": provider,
                f"COLONY_{provider.upper()}_BASE_URL": base,
            }
        )
        llm = llm_from_settings(settings, db)
        llm = replace(llm, runner=StructuredRunner(llm.chat, base_delay=0.001))
        deps = local_deps(
            settings, db, InlineTransport(), llm, KnowledgeStore(db, OfflineHashEmbedder())
        )
        session = create_session(deps, ORG, "founder")
        run_turn(deps, ORG, "founder", session, "How is the pipeline?", sink=lambda _: None)
    [row] = rows(db)
    assert row["agent_id"] == "AGT-001" and row["campaign_id"] is None
    assert (row["tokens_in"], row["tokens_cached"], row["tokens_out"]) == (2_000, 1_024, 10)
    assert row["cost_usd"] == expected
    [day] = rows(db, "llm_usage_daily")
    assert (day["calls"], day["cost_usd"]) == (1, expected)
