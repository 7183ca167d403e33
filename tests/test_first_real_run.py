"""What a first run against a real model showed (issue 37 item 6): each failure of ours it
found, pinned by a test that fails on the code before its fix.

Real parts: the OpenAI and Gemini adapters through their official SDKs, over HTTP to the local
wire stand-ins (``colony.testing.wire``); the real runner, assembler, templates and token
counter; for the call records, embedded PostgreSQL. Stood in: the providers' APIs. The
runner's back-off sleeps are recorded, never slept. A contact given up on when its message is
dead-lettered is in ``test_model_outcomes`` with the model's other failure outcomes. (The
grounding check's own failures are not here: AGT-003's grounding is being rewritten against
research sources.)
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import openai
import pytest

from colony.adapters.gemini_chat import GeminiChatModel
from colony.adapters.openai_chat import OpenAIChatModel
from colony.context.assembler import AssemblyRequest, assemble
from colony.context.budgets import load_budgets
from colony.context.tokens import counter_for
from colony.contracts import OUTPUT_CONTRACTS, IcpDefinition, OrgContext
from colony.deadline import window_seconds
from colony.errors import (
    DataMissing,
    ProviderError,
    ProviderUnavailable,
    error_summary,
)
from colony.llm import StructuredRunner
from colony.local.demo import read_json
from colony.observability.tracing import CallRecorder, NoopTracer, TracedChatModel
from colony.ports import CallContext, LlmCallRecord, Message, ModelRequest, ModelResponse
from colony.registry.functions import FUNCTIONS
from colony.store import fetch_all
from colony.testing.fakes import RecordingSleep
from colony.testing.wire import (
    Reply,
    WireServer,
    error_reply,
    gemini_content_reply,
    openai_chat_reply,
)
from colony.testing.wire.replies import RecordedRequest
from tests.conftest import PgDB
from tests.test_llm_adapters import VALID
from tests.test_model_outcomes import REFUSED_FORMAT

pytestmark = [pytest.mark.usefixtures("no_ambient_config"), pytest.mark.covers("TECH-008")]

PROMPT_SECRET = "PROMPT-SECRET-5d1e"  # customer data: never in an error's reason
ORG = "org_zoomprop_demo"


def make_request(model: str, contract: str = "qualification_score", **changes: Any) -> ModelRequest:
    options: dict[str, Any] = {
        "model": model,
        "messages": (
            Message("system", "You score prospects."),
            Message("user", f"Score Dana Whitfield of Acme Health. {PROMPT_SECRET}"),
        ),
        "output_name": contract,
        "output_schema": OUTPUT_CONTRACTS[contract].model_json_schema(),
        "max_output_tokens": 321,
        **changes,
    }
    return ModelRequest(**options)


@pytest.fixture
def models(server: WireServer) -> Iterator[Callable[[str], Any]]:
    """``models(sdk)``: the real adapter for ``sdk``, pointed at the stand-in. OpenAI's is
    handed an SDK client made for the stand-in's address, and so speaks to it as to OpenAI's
    own API (an adapter given only an address that is not OpenAI's treats it as a compatible
    server: see ``test_a_compatible_server_...``)."""
    made: list[Any] = []

    def make(sdk: str) -> Any:
        if sdk == "gemini":
            made.append(GeminiChatModel("g-test", base_url=server.gemini_base_url))
        else:
            client = openai.OpenAI(
                api_key="sk-test", base_url=server.openai_base_url, max_retries=0
            )
            made.append(client)
            made.append(OpenAIChatModel("sk-test", client=client))
        return made[-1]

    yield make
    for model in made:
        model.close()


def _model(sdk: str) -> str:
    return "gemini-test" if sdk == "gemini" else "gpt-test"


def _reply(sdk: str, content: str) -> Reply:
    return gemini_content_reply(content) if sdk == "gemini" else openai_chat_reply(content)


def _schema_sent(sdk: str, sent: RecordedRequest) -> dict[str, Any]:
    if sdk == "gemini":
        return dict(sent.body["generationConfig"]["responseJsonSchema"])
    return dict(sent.body["response_format"]["json_schema"]["schema"])


def pairs(original: Any, sent: Any) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Each node of a contract's schema beside the node the provider's dialect made of it."""
    if not isinstance(original, dict) or not isinstance(sent, dict) or "$ref" in original:
        return
    yield original, sent
    for key in ("properties", "$defs"):
        for name, sub in (original.get(key) or {}).items():
            yield from pairs(sub, (sent.get(key) or {}).get(name))
    yield from pairs(original.get("items"), sent.get("items"))
    for i, sub in enumerate(original.get("anyOf") or ()):
        yield from pairs(sub, (sent.get("anyOf") or [None] * (i + 1))[i])


# -- 9 of 12 failures: limits the model was never told ------------------------------------------


@pytest.mark.parametrize("name", sorted(OUTPUT_CONTRACTS))
def test_every_contract_field_says_what_it_is(name: str) -> None:
    schema = OUTPUT_CONTRACTS[name].model_json_schema()
    nodes = [schema, *(schema.get("$defs") or {}).values()]
    for node in nodes:
        for field, sub in (node.get("properties") or {}).items():
            if "$ref" not in sub:  # a nested model is described by its own fields
                assert sub.get("description"), f"{name}: {field} has no description"


@pytest.mark.parametrize("sdk", ["openai", "gemini"])
@pytest.mark.parametrize("name", sorted(OUTPUT_CONTRACTS))
def test_every_length_and_date_the_provider_is_sent_is_said_in_words(
    sdk: str, name: str, server: WireServer, models: Callable[..., Any]
) -> None:
    contract = OUTPUT_CONTRACTS[name]
    models(sdk).request(make_request(_model(sdk), name, output_schema=contract.model_json_schema()))
    schema = _schema_sent(sdk, server.requests[-1])
    told = 0
    for original, sent in pairs(contract.model_json_schema(), schema):
        assert "maxLength" not in sent  # neither OpenAI's strict mode nor Gemini enforces it
        if "maxLength" in original:
            assert f"{original['maxLength']} characters" in sent.get("description", ""), sent
            told += 1
        if original.get("format") == "date":
            assert sent.get("format") == "date" and "YYYY-MM-DD" in sent["description"]
            told += 1
    if name in ("qualification_score", "prospect_enrichment"):
        assert told >= 2  # reasoning / summary and detail, quote, observed_on


def test_a_compatible_server_is_sent_max_tokens_and_the_lengths_its_grammar_enforces(
    server: WireServer, models: Callable[..., Any]
) -> None:
    # The stand-in's address is not OpenAI's own: the adapter speaks to it as to a local server.
    with OpenAIChatModel("sk-test", base_url=server.openai_base_url) as model:
        model.request(make_request("local-model"))
    body = server.requests[-1].body
    assert body["max_tokens"] == body["max_completion_tokens"] == 321
    reasoning = body["response_format"]["json_schema"]["schema"]["properties"]["reasoning"]
    assert (reasoning["minLength"], reasoning["maxLength"]) == (1, 400)
    # OpenAI's own API refuses max_tokens on its reasoning models: it is sent only the other.
    models("openai").request(make_request("gpt-test"))
    assert "max_tokens" not in server.requests[-1].body


# -- CONST-004: missing_data, on a provider that enforces its schema -----------------------------


@pytest.mark.parametrize("sdk", ["openai", "gemini"])
def test_missing_data_is_an_answer_the_schema_sent_admits_and_the_runner_reads(
    sdk: str, server: WireServer, models: Callable[..., Any]
) -> None:
    missing = {"kind": "missing_data", "missing_fields": ["icp_rubric"], "reason": "no rubric"}
    server.script(_reply(sdk, json.dumps({"answer": missing})))
    with pytest.raises(DataMissing) as caught:
        StructuredRunner(models(sdk)).run(
            make_request(_model(sdk)), OUTPUT_CONTRACTS["qualification_score"]
        )

    assert caught.value.fields == ("icp_rubric",)
    assert len(server.requests) == 1  # never repaired into a guess
    answer = _schema_sent(sdk, server.requests[0])["properties"]["answer"]
    contract, missing_data = answer["anyOf"]
    assert "reasoning" in contract["properties"]
    assert missing_data["properties"]["kind"]["enum"] == ["missing_data"]


def test_a_contracts_own_answer_still_comes_back_from_inside_the_wrapper(
    server: WireServer, models: Callable[..., Any]
) -> None:
    server.script(openai_chat_reply(json.dumps({"answer": VALID})))
    result = StructuredRunner(models("openai")).run(
        make_request("gpt-test"), OUTPUT_CONTRACTS["qualification_score"]
    )
    assert result.output == OUTPUT_CONTRACTS["qualification_score"].model_validate(VALID)
    assert (result.attempts, result.repaired) == (1, False)


# -- the verbatim-quote rule and signal_referenced, in the prompt -------------------------------


def _assembled(profile: str, task: Mapping[str, Any]) -> str:
    contact = read_json("contacts.json")[0]
    org = OrgContext(org_name="ZoomProp", icp=IcpDefinition(**read_json("icp.json")))
    request = AssemblyRequest(
        profile, "org_demo", "run-1", org, entities={"contact": contact}, task=dict(task)
    )
    out = assemble(request, budgets=load_budgets(), counter=counter_for("gpt-4o"))
    return "\n".join(m.content for m in out.messages)


def test_the_model_is_told_its_quotes_must_be_verbatim_and_what_signal_referenced_holds() -> None:
    # the rule the grounding check applies to a quote (it was in a code comment only)
    assert "word for word" in _assembled("AGT-003", {})
    message = _assembled(
        "AGT-005",
        {
            "angle": "Signal",
            "tier": "T1",
            "step": 1,
            "channel": "email",
            "guidance": "(none)",
            "competitors": ["FacilityIQ"],
        },
    )
    assert "signal_referenced: the detail of the signal" in message
    qualification = _assembled("AGT-004", {"today": "2026-12-01"})
    assert "reasoning: string (max 2 sentences, at most 400 characters)" in qualification


# -- the repair: something the model sees must change ------------------------------------------


def test_a_repair_says_how_far_off_the_answer_was_and_is_not_sampled_at_zero(
    server: WireServer, models: Callable[..., Any]
) -> None:
    too_long = {**VALID, "reasoning": "y" * 500}
    server.script(openai_chat_reply(json.dumps(too_long)), openai_chat_reply(json.dumps(VALID)))
    result = StructuredRunner(models("openai")).run(
        make_request("gpt-test", temperature=0.0), OUTPUT_CONTRACTS["qualification_score"]
    )

    assert result.repaired
    first, second = (r.body for r in server.requests)
    assert first["temperature"] == 0.0 and second["temperature"] >= 0.3
    repair = second["messages"][-1]["content"]
    assert "reasoning: String should have at most 400 characters (it has 500" in repair
    assert "y" * 50 not in repair  # how long, never what


def test_a_repair_says_how_a_date_is_written(
    server: WireServer, models: Callable[..., Any]
) -> None:
    signal = {"type": "hiring", "detail": "Hiring a director.", "quote": "hiring a director"}
    bad = {"summary": "A health system.", "signals": [{**signal, "observed_on": "last spring"}]}
    good = {"summary": "A health system.", "signals": [{**signal, "observed_on": None}]}
    server.script(openai_chat_reply(json.dumps(bad)), openai_chat_reply(json.dumps(good)))
    StructuredRunner(models("openai")).run(
        make_request("gpt-test", "prospect_enrichment"), OUTPUT_CONTRACTS["prospect_enrichment"]
    )
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "signals.0.observed_on" in repair and "YYYY-MM-DD" in repair


# -- a provider's 5xx: its reason kept, not retried when it says the request is invalid ---------


@pytest.mark.parametrize("sdk", ["openai", "gemini"])
def test_a_5xx_that_says_the_request_is_invalid_is_not_retried_and_says_why(
    sdk: str, server: WireServer, models: Callable[..., Any]
) -> None:
    server.script(error_reply(500, REFUSED_FORMAT))
    sleep = RecordingSleep()
    with pytest.raises(ProviderError) as caught:
        StructuredRunner(models(sdk), sleep=sleep).run(
            make_request(_model(sdk)), OUTPUT_CONTRACTS["qualification_score"]
        )

    assert not isinstance(caught.value, ProviderUnavailable)
    assert len(server.requests) == 1 and sleep.delays == []
    assert "but got: json_schema" in (caught.value.reason or "")
    assert "but got: json_schema" in error_summary(caught.value)  # what logs and traces say


class _Statuses(NoopTracer):
    """A tracer that keeps what each failed generation was told (``Generation.fail``)."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    @contextmanager
    def generation(self, request: ModelRequest, context: CallContext) -> Iterator[Any]:
        failed = self.failed

        class _Generation:
            def succeed(self, record: LlmCallRecord, response: ModelResponse) -> None:
                return None

            def fail(self, status_message: str) -> None:
                failed.append(status_message)

        yield _Generation()


def test_a_providers_reason_reaches_the_trace_without_the_prompts_words(
    server: WireServer, models: Callable[..., Any]
) -> None:
    echo = f"model overloaded while reading: Score Dana Whitfield of Acme Health. {PROMPT_SECRET}"
    server.fail(503, times=2, message=echo)
    tracer = _Statuses()
    chat = TracedChatModel(models("openai"), tracer)
    request = make_request("gpt-test", metadata={"org_id": "org_a", "agent_id": "AGT-004"})
    with pytest.raises(ProviderUnavailable) as caught:
        StructuredRunner(chat, max_attempts=2, sleep=lambda _: None).run(
            request, OUTPUT_CONTRACTS["qualification_score"]
        )

    reason = caught.value.reason or ""
    assert "model overloaded while reading" in reason and len(reason) <= 200
    for word in (PROMPT_SECRET, "Whitfield", "Acme Health"):
        assert word not in reason
    assert len(tracer.failed) == 2 and all(reason in status for status in tracer.failed)


# -- timeouts, output caps, tokens ---------------------------------------------------------------


def test_an_adapters_own_timeout_is_a_default_functions_model_window(
    server: WireServer, models: Callable[..., Any]
) -> None:
    default = next(f.name for f in FUNCTIONS.values() if f.timeout_seconds == 120)
    window = window_seconds(default)
    assert window == 100.0  # a 120 s function, less its wrap-up
    with OpenAIChatModel("sk-test", base_url=server.openai_base_url) as model:
        assert model._client.timeout == window
    assert models("gemini")._client._api_client._http_options.timeout == window * 1000


def test_a_timed_out_call_is_recorded_with_the_prompt_tokens_it_sent(
    testdb: PgDB, server: WireServer
) -> None:
    db = testdb.app()
    with db.transaction("org_a") as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES ('org_a', 'org_a')")
    release = threading.Event()

    def stall(request: Any) -> Reply:
        release.wait(30)
        return openai_chat_reply(json.dumps(VALID))

    server.script(stall)
    account = {"system": 400, "kc": 300, "entity": 200, "history": 0, "task": 100}
    meta = {"org_id": "org_a", "agent_id": "AGT-004", "run_id": "run-1"}
    request = make_request(
        "gpt-test", timeout_seconds=0.3, metadata={**meta, "context_budget_used": account}
    )
    with OpenAIChatModel("sk-test", base_url=server.openai_base_url) as model:
        try:
            with pytest.raises(ProviderUnavailable):
                TracedChatModel(model, None, CallRecorder(db)).request(request)
        finally:
            release.set()
    with db.transaction("org_a") as cur:
        rows = fetch_all(cur, "SELECT agent_id, tokens_in, tokens_out, latency_ms FROM llm_calls")
    [row] = rows
    assert (row["agent_id"], row["tokens_in"], row["tokens_out"]) == ("AGT-004", 1000, 0)
    assert row["latency_ms"] >= 300  # the time it was given before it was cut


def test_a_tokenizer_not_known_here_is_counted_with_a_margin_over_o200k() -> None:
    text = _assembled("AGT-004", {"today": "2026-12-01"})
    o200k = counter_for("gpt-4o").count(text)
    local = counter_for("qwen2.5-coder-1.5b-instruct")
    # Qwen2.5's own tokenizer counted 8% more than o200k on our prompts: an estimate that
    # is under the real count lets a section pass its budget and overrun it on the model.
    assert local.count(text) >= math.ceil(o200k * 1.08)
    assert "estimate" in local.label
    # the offline model has no tokenizer of its own: o200k's count is its count
    assert counter_for("offline-deterministic-v1").count(text) == o200k
