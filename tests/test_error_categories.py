"""Seed §8.2: the agent runtime's error categories reach Sentry, each its own issue, tagged.

The real sentry-sdk (its own HTTP transport, the deployed ``init_sentry`` and scrubbing)
sends to ``SentryServer``, a local stand-in speaking Sentry's envelope protocol; the model
SDKs talk to the wire stand-ins (``colony.testing.wire``); the functions are real
functions-framework apps. Each test plants payload text in the failing input and checks the
envelopes, as they crossed the wire, never carry it. The circuit breaker's trip is checked
in ``tests/test_campaign_flow.py``, a chat turn's refused tool call in
``tests/test_chat_e2e.py``, a planted API key in ``tests/test_secrets.py``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from colony.context.assembler import AssemblyRequest
from colony.context.budgets import Budget, BudgetBook
from colony.contracts import OrgContext
from colony.errors import ContextBudgetExceeded, ToolCallInvalid
from colony.llm.agent_call import LlmDeps, call_agent, llm_from_settings
from colony.observability.telemetry import flush_telemetry
from colony.runtime.deps import build_deps, set_deps_for_tests
from colony.settings import Settings
from colony.testing.inline import InlineTransport
from colony.testing.sentry_server import SentryServer, reporting_to
from colony.testing.wire import (
    DEFAULT_ROUTES,
    WireServer,
    gemini_content_reply,
    openai_chat_reply,
)
from tests.apps import source_loader

pytestmark = pytest.mark.covers("TECH-007")

ORG, RUN = "org-a", "r-1"

PUBSUB_SOURCE = """
from colony.runtime.edge import MemoryRejections, pubsub_handler
from colony.runtime.deps import build_deps, set_deps_for_tests
from colony.settings import Settings
from colony.testing.inline import InlineTransport

WORK = []
RECORDER = MemoryRejections()
SETTINGS = Settings()  # local: no OIDC token needed (tests/test_invoker.py checks them)


@pubsub_handler("qualification", recorder=lambda: RECORDER, config=lambda: SETTINGS)
def on_event(event, event_id):
    WORK[0]()
"""

# A Cloud Tasks target, as deployed ones are: the invoker's OIDC token (not needed locally),
# a task body naming its org and run, then the work.
TASK_SOURCE = """
import os

os.environ["K_SERVICE"] = "daily-brief"  # the registered function this stands in for

from pydantic import BaseModel

from colony.runtime.edge import http_json
from colony.runtime.edge.invoker import invoker_only

WORK = []


class Task(BaseModel):
    org_id: str
    run_id: str


@http_json(caller=invoker_only("daily-brief"))
def handle(req):
    req.parse(Task)
    return WORK[0]()
"""


def planted() -> str:
    """Prompt and transcript text built at run time, so no source line a frame shows has it."""
    marker = uuid.uuid4().hex
    return f"Customer said: cancel everything, my card is 4111-{marker}"


@pytest.fixture
def sentry(monkeypatch: pytest.MonkeyPatch) -> Iterator[SentryServer]:
    monkeypatch.setenv("SENTRY_RELEASE", "test")  # else the SDK runs git for one
    with SentryServer() as server, reporting_to(server):
        yield server


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return source_loader(tmp_path, monkeypatch)


def push(data: dict[str, Any]) -> dict[str, Any]:
    raw = base64.b64encode(json.dumps(data).encode()).decode()
    return {"message": {"data": raw, "messageId": "m-1"}, "subscription": "s"}


def tiny_budgets(llm: LlmDeps) -> LlmDeps:
    """Every section 10 tokens: the role and constraints alone overflow the system section."""
    small = Budget(system=10, kc=10, entity=10, history=10, task=10)
    return dataclasses.replace(llm, budgets=BudgetBook({"default": small}, llm.budgets.models))


def scoring_request(text: str) -> AssemblyRequest:
    contact = {"name": "Dana Reyes", "notes": text}
    return AssemblyRequest(
        "AGT-004", ORG, RUN, OrgContext(org_name="Acme"), entities={"contact": contact}
    )


def content_request(text: str) -> AssemblyRequest:
    task = {"topic": text, "format": "blog_post", "competitors": "FacilityIQ"}
    return AssemblyRequest("AGT-008", ORG, RUN, OrgContext(org_name="Acme"), task=task)


def only(server: SentryServer, category: str) -> dict[str, Any]:
    """The one event the server received, which must be of ``category``."""
    events = server.events()
    assert len(events) == 1, [e.get("tags") for e in events]
    (event,) = events
    assert event["tags"]["colony.category"] == category
    return event


def ids(event: dict[str, Any]) -> dict[str, str]:
    return {k: event["tags"].get(k) for k in ("org_id", "run_id", "agent_id")}


def test_a_context_assembly_failure_in_a_pubsub_function_is_its_own_tagged_issue(
    sentry: SentryServer, load: Any
) -> None:
    client, module, _ = load(PUBSUB_SOURCE, "on_event", "cloudevent")
    text = planted()
    llm = tiny_budgets(llm_from_settings(Settings.from_env({})))
    module.WORK.append(lambda: call_agent(llm, scoring_request(text)))
    start = {"kind": "campaign.start", "org_id": ORG, "campaign_id": "c-1", "run_id": RUN}

    assert client.post("/", json=push(start)).status_code == 500  # ours to fix: retried

    event = only(sentry, "context_assembly")  # the edge's report of it was a duplicate
    assert ids(event) == {"org_id": ORG, "run_id": RUN, "agent_id": "AGT-004"}
    assert event["fingerprint"] == ["colony", "context_assembly", "context_budget_exceeded"]
    (value,) = [v["value"] for v in event["exception"]["values"]]
    assert value == "ContextBudgetExceeded (context_budget_exceeded)"
    assert text.encode() not in sentry.raw() and b"Dana Reyes" not in sentry.raw()


@pytest.fixture
def local_settings() -> Iterator[None]:
    """The process's ``Deps`` for the invoker check (local: no token needed), with no
    database: nothing here reads one."""
    set_deps_for_tests(
        build_deps(Settings.from_env({}), db=SimpleNamespace(), transport=InlineTransport())
    )
    yield
    set_deps_for_tests(None)


def test_a_cloud_tasks_function_tags_the_org_and_run_its_body_names(
    sentry: SentryServer, load: Any, local_settings: None
) -> None:
    """Item b: an HTTP function opens its scope knowing only its agent; the task body's org
    and run are tags from the moment the body is parsed."""
    client, module, _ = load(TASK_SOURCE, "handle", "http")
    text = planted()
    llm = tiny_budgets(llm_from_settings(Settings.from_env({})))
    module.WORK.append(lambda: call_agent(llm, content_request(text)))

    response = client.post("/", json={"org_id": "org-b", "run_id": "brief:2026-12-02"})

    assert response.status_code == 500
    assert text not in response.get_data(as_text=True)
    event = only(sentry, "context_assembly")
    assert ids(event) == {"org_id": ORG, "run_id": RUN, "agent_id": "AGT-008"}  # the call's

    def fail() -> None:
        raise ContextBudgetExceeded(text, section="task", tokens=9, budget=1)

    module.WORK[0] = fail  # not a category: the edge's own report, with the body's ids
    sentry.clear()
    assert client.post("/", json={"org_id": "org-b", "run_id": "brief:1"}).status_code == 500
    (event,) = sentry.events()
    assert "colony.category" not in event["tags"]
    assert ids(event) == {"org_id": "org-b", "run_id": "brief:1", "agent_id": "AGT-010"}
    assert text.encode() not in sentry.raw()


@pytest.mark.parametrize("sdk", ["openai", "gemini"])
def test_a_tool_call_the_provider_sends_unparsed_is_reported_from_each_sdk(
    sentry: SentryServer, sdk: str
) -> None:
    text = planted()
    with WireServer() as wire:
        if sdk == "openai":
            reply = openai_chat_reply(None, tool_calls=[("search_knowledge", {})])
            call = reply.body["choices"][0]["message"]["tool_calls"][0]
            call["function"]["arguments"] = '{"query": "' + text  # cut short: not JSON
            env = {"OPENAI_API_KEY": "sk-test", "COLONY_OPENAI_BASE_URL": wire.openai_base_url}
        else:  # Gemini says so itself: the function call it made did not parse
            reply = gemini_content_reply(None, finish_reason="MALFORMED_FUNCTION_CALL")
            env = {"GEMINI_API_KEY": "gm-test", "COLONY_GEMINI_BASE_URL": wire.gemini_base_url}
        route = "openai.chat.completions" if sdk == "openai" else "gemini.generateContent"
        answers = next(r for r in DEFAULT_ROUTES if r.name == route)  # not countTokens
        wire.add_route(dataclasses.replace(answers, respond=lambda _: reply))
        llm = llm_from_settings(Settings.from_env({"COLONY_LLM_PROVIDER": sdk, **env}))
        with pytest.raises(ToolCallInvalid):
            call_agent(llm, content_request(text))  # the prompt carries it too
    flush_telemetry()  # what every function does before it answers (no edge ran here)

    event = only(sentry, "tool_call_parse")
    assert ids(event) == {"org_id": ORG, "run_id": RUN, "agent_id": "AGT-008"}
    assert event["fingerprint"] == ["colony", "tool_call_parse", "tool_call_invalid"]
    assert text.encode() not in sentry.raw()
