"""Each agent's model call is sized to its contract (issue 15 item 3): the output token cap
holds the largest answer the contract allows, Gemini's thinking budget is explicit, and a
profile may name its own model. Pure: the packaged budgets file, the contracts' JSON schemas,
and ``call_agent`` over a recording ``ChatModel`` (the real runner, a stand-in model that
answers from the schema it is sent, as the wire stand-ins do)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colony.context.assembler import PROFILES, AssemblyRequest, profile_of
from colony.context.budgets import load_budgets
from colony.context.tokens import counter_for
from colony.contracts import OUTPUT_CONTRACTS, OrgContext
from colony.deadline import (
    DEFAULT_CALL_SECONDS,
    MIN_CALL_SECONDS,
    WRAP_UP_SECONDS,
    model_window,
    window_seconds,
)
from colony.errors import ConfigError, ProviderUnavailable
from colony.llm import StructuredRunner
from colony.llm.agent_call import LlmDeps, call_agent
from colony.ports import ModelRequest, ModelResponse, Usage
from colony.registry.agents import AGENTS
from colony.registry.functions import FUNCTIONS
from colony.runtime.steps import LEASE_SECONDS
from colony.testing.wire import sample_from_schema

CHARS_PER_TOKEN = 4  # English prose through a BPE tokenizer: ~4; JSON punctuation counted too
OPENAI_OUTPUT_LIMIT = 16_384  # gpt-4o's largest completion: a cap above it is refused


def largest_answer(node: dict[str, Any], defs: dict[str, Any]) -> int:
    """Characters of the largest JSON answer ``node`` admits (every list at its maxItems,
    every string at its maxLength); fails on an unbounded list or free string."""
    if "$ref" in node:
        return largest_answer(defs[node["$ref"].split("/")[-1]], defs)
    if "anyOf" in node:
        return max(largest_answer(n, defs) for n in node["anyOf"])
    if "enum" in node or "const" in node:
        return max(len(json.dumps(v)) for v in node.get("enum", [node.get("const")]))
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        return 2 + sum(len(k) + 4 + largest_answer(v, defs) for k, v in props.items())
    if kind == "array":
        assert "maxItems" in node, f"an unbounded list: {node}"
        return 2 + node["maxItems"] * (1 + largest_answer(node.get("items", {}), defs))
    if kind == "string":
        if node.get("format") in ("date", "date-time"):
            return 32
        assert "maxLength" in node, f"an unbounded string: {node}"
        return node["maxLength"] + 2
    return 24  # a number, a boolean, null


def profiles() -> list[str]:
    return sorted({*AGENTS, *PROFILES})


@pytest.mark.parametrize("profile", profiles())
def test_every_profiles_output_cap_holds_the_largest_answer_its_contract_allows(
    profile: str,
) -> None:
    _, output, _ = profile_of(profile)
    schema = OUTPUT_CONTRACTS[output].model_json_schema()
    need = largest_answer(schema, schema.get("$defs", {})) // CHARS_PER_TOKEN
    cap = load_budgets().call_for(profile).output
    assert need <= cap <= OPENAI_OUTPUT_LIMIT, f"{profile} ({output}) needs ~{need}, cap {cap}"


def test_content_bodies_of_8000_characters_fit_where_1024_tokens_did_not() -> None:
    # the reason caps are per profile: AGT-008's 8,000-character body alone is ~2,000 tokens
    assert load_budgets().call_for("AGT-008").output >= 8000 // CHARS_PER_TOKEN
    assert load_budgets().call_for("AGT-008").thinking > 0  # explicit, never the model's own


class Recording:
    """A ``ChatModel`` that records what it was asked and answers from the schema."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        answer = json.dumps(sample_from_schema(dict(request.output_schema)))
        return ModelResponse(answer, Usage(1, 1), request.model)


def deps_over(budgets_file: Path | None, *, pinned: bool = False) -> tuple[LlmDeps, Recording]:
    model = Recording()
    budgets = load_budgets(budgets_file)
    llm = LlmDeps(
        model,
        "gemini-2.5-pro",
        budgets,
        StructuredRunner(model),
        counter_for("gemini-2.5-pro"),
        provider="gemini",
        pinned=pinned,
    )
    return llm, model


def request_for(profile: str) -> AssemblyRequest:
    task = {"topic": "Lease renewals", "format": "blog_post", "competitors": "FacilityIQ"}
    return AssemblyRequest(profile, "org_a", "run_1", OrgContext(org_name="Acme"), task=task)


def test_a_call_carries_its_profiles_cap_thinking_budget_and_model(tmp_path: Path) -> None:
    override = tmp_path / "budgets.json"
    override.write_text(
        json.dumps({"calls": {"AGT-008": {"thinking": 256, "models": {"gemini": "gemini-flash"}}}})
    )
    llm, model = deps_over(override)
    call_agent(llm, request_for("AGT-008"))
    [sent] = model.requests
    assert (sent.model, sent.max_output_tokens, sent.thinking_budget) == (
        "gemini-flash",
        3072,  # kept from the packaged entry: an override changes only what it names
        256,
    )
    # COLONY_LLM_MODEL pins one model for every profile
    pinned, model = deps_over(override, pinned=True)
    call_agent(pinned, request_for("AGT-008"))
    assert model.requests[0].model == "gemini-2.5-pro"


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        ({"AGT-008": {"output": 0}}, "output must be 1..65536"),
        ({"AGT-008": {"thinking": -1}}, "thinking must be 0..32768"),
        ({"AGT-008": {"tokens": 5}}, "may set only output, thinking and models"),
        ({"AGT-008": {"models": "gpt"}}, "models must map provider"),
        ([], "'calls' must map profile"),
    ],
)
def test_a_bad_calls_entry_is_a_clear_config_error(
    tmp_path: Path, calls: Any, problem: str
) -> None:
    override = tmp_path / "budgets.json"
    override.write_text(json.dumps({"calls": calls}))
    with pytest.raises(ConfigError, match=problem):
        load_budgets(override)


# -- time: model calls < window < function timeout < step lease ---------------------------


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_functions_model_window_ends_before_its_timeout_and_its_lease(name: str) -> None:
    function = FUNCTIONS[name]
    window = window_seconds(name)
    assert window is not None and window > MIN_CALL_SECONDS
    assert window + WRAP_UP_SECONDS <= function.timeout_seconds < LEASE_SECONDS


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Slow:
    """A model that takes ``seconds`` of the clock per call, then is unavailable."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        self.clock, self.seconds = clock, seconds
        self.timeouts: list[float | None] = []

    def request(self, request: ModelRequest) -> ModelResponse:
        self.timeouts.append(request.timeout_seconds)
        # a client gives up at its timeout, as the SDKs do (tests/test_llm_adapters.py)
        self.clock.now += min(self.seconds, request.timeout_seconds or self.seconds)
        raise ProviderUnavailable("HTTP 503")


def test_no_attempt_or_back_off_outlasts_the_invocations_window() -> None:
    clock, sleeps = Clock(), []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.now += seconds

    model = Slow(clock, 30.0)
    runner = StructuredRunner(model, max_attempts=10, sleep=sleep, clock=clock)
    request = ModelRequest("m", (), "qualification_score", {})
    with model_window(100.0, clock), pytest.raises(ProviderUnavailable):
        runner.run(request, OUTPUT_CONTRACTS["qualification_score"])
    # each attempt was given only what was left (less the back-off slept before it) ...
    assert model.timeouts == [100.0, 69.5, 38.5, 6.5]
    assert sleeps == [0.5, 1.0, 2.0]  # ... and the fourth back-off, 4 s, would outlast it
    assert clock.now - 1000.0 == pytest.approx(100.0)  # all of it, and not a second more
    # with less than MIN_CALL_SECONDS left, no call starts at all
    late = Slow(clock, 1.0)
    with model_window(MIN_CALL_SECONDS - 1, clock), pytest.raises(ProviderUnavailable) as caught:
        StructuredRunner(late, clock=clock).run(request, OUTPUT_CONTRACTS["qualification_score"])
    assert late.timeouts == [] and "left of this invocation's model window" in str(caught.value)
    # outside a window (tests, tools), each call is given a default function's window,
    # never the client's own (it was 120 s while that window is 100 s)
    plain = Slow(Clock(), 1.0)
    with pytest.raises(ProviderUnavailable):
        StructuredRunner(plain, max_attempts=2, sleep=lambda _: None).run(
            request, OUTPUT_CONTRACTS["qualification_score"]
        )
    assert plain.timeouts == [DEFAULT_CALL_SECONDS] * 2 == [100.0, 100.0]


def test_the_edge_opens_the_window_of_the_function_it_serves() -> None:
    assert window_seconds("qualification") == FUNCTIONS["qualification"].timeout_seconds - 20
    assert window_seconds(None) is None and window_seconds("not-a-function") is None
