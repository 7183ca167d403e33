"""An eval case is driven as its flow drives the agent (issue 37 item 3: the templates and
budgets under test are the flow's): AGT-010's case sends the model exactly the messages the
daily brief's own flow sends for the same rows.

Real parts: embedded PostgreSQL, the flow (``flows.insights.brief.daily_brief``), the eval's
driver, the assembler and the offline model; a ``ChatModel`` wrapper keeps each request."""

from __future__ import annotations

import dataclasses
import re

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.offline import OfflineChatModel
from colony.evals.cases import Case
from colony.evals.drive import Env, drive
from colony.evals.drive.brief import org_of, seed
from colony.flows.insights.brief import daily_brief
from colony.knowledge import KnowledgeStore
from colony.llm import StructuredRunner
from colony.llm.agent_call import LlmDeps, llm_from_settings
from colony.ports import Message, ModelRequest, ModelResponse, TextSink
from colony.settings import Settings
from colony.testing.inline import FIXED_NOW, InlineTransport, local_deps
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("AGT-010")

BOUNDARY = re.compile(r"(?<=<<DATA )[0-9A-Za-z]+|(?<=<<END )[0-9A-Za-z]+")


class Kept:
    """The offline model, keeping every request it answers."""

    def __init__(self) -> None:
        self.inner = OfflineChatModel()
        self.requests: list[ModelRequest] = []

    def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.inner.request(request)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        self.requests.append(request)
        return self.inner.stream(request, on_text)


def kept_llm(settings: Settings) -> tuple[LlmDeps, Kept]:
    model = Kept()
    llm = llm_from_settings(settings)
    return dataclasses.replace(llm, chat=model, runner=StructuredRunner(model)), model


def shown(messages: tuple[Message, ...], org: str) -> list[tuple[str, str]]:
    """The messages with what differs per call or per org made the same."""
    return [(m.role, BOUNDARY.sub("B", m.content).replace(org, "ORG")) for m in messages]


def test_the_brief_case_sends_the_messages_the_brief_flow_sends(testdb: PgDB) -> None:
    rows = {
        "deals": [{"stage": "proposal", "value": 200000, "name": "D1"}],
        "pending": ["follow_up", "deal_update"],
        "outbox": [{"day": "yesterday", "hour": 9, "status": "bounced"}],
        "published": [{"day": "yesterday", "hour": 10}],
        "campaigns": [{"status": "paused"}],
        "replies": [{"day": "yesterday", "hour": 11, "sentiment": "positive", "body": "Yes."}],
    }
    day = FIXED_NOW.date()  # the flow writes today's brief
    inputs = {"rows": rows, "brief_date": day.isoformat(), "icp": None, "org_name": "Eval org"}
    case = Case("AGT-010/x", "AGT-010", "same rows", "answer", {**inputs, "kc": []}, ())
    settings = Settings.from_env({})
    db = testdb.app()

    flow_llm, flow_model = kept_llm(settings)
    org = org_of(case, Env(flow_llm, db, "the-flow"))
    with db.transaction(org) as cur:
        seed(cur, org, day, rows)
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())  # the new org's is empty
    deps = local_deps(settings, db, InlineTransport(), flow_llm, knowledge)
    daily_brief(deps, org, day)

    eval_llm, eval_model = kept_llm(settings)
    outcome = drive(case, Env(eval_llm, db, "the-eval"))
    assert outcome.status == "answer", outcome.error
    (flow,), (evaluated,) = flow_model.requests, eval_model.requests
    eval_org = org_of(case, Env(eval_llm, db, "the-eval"))
    assert shown(evaluated.messages, eval_org) == shown(flow.messages, org)
    assert (evaluated.output_name, evaluated.max_output_tokens) == (
        flow.output_name,
        flow.max_output_tokens,
    )
    assert outcome.facts["snapshot"]["replies_positive"] == 1


def test_a_case_on_another_day_counts_that_days_rows(testdb: PgDB) -> None:
    rows = {"outbox": [{"day": "yesterday", "hour": 1, "status": "sent"}] * 3}
    case = Case(
        "AGT-010/y", "AGT-010", "t", "answer", {"rows": rows, "brief_date": "2026-06-02"}, ()
    )
    llm, _ = kept_llm(Settings.from_env({}))
    outcome = drive(case, Env(llm, testdb.app(), "r"))
    assert outcome.facts["snapshot"]["messages_sent"] == 3
