"""Chat adapters through the official SDKs, against a local server speaking their protocol.

``openai`` and ``google-genai`` make real HTTP requests to 127.0.0.1, where
``colony.testing.wire.WireServer`` records them and answers like the real APIs. The runner's
back-off sleeps are recorded, never slept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any, Literal

import openai
import pytest
from google.genai import errors as genai_errors
from pydantic import BaseModel, ConfigDict, Field

from colony.adapters.gemini_chat import GEMINI_SCHEMA_KEYWORDS, GeminiChatModel, gemini_json_schema
from colony.adapters.openai_chat import OpenAIChatModel
from colony.adapters.openai_schema import STRICT_KEYWORDS, schema_name, strict_json_schema
from colony.adapters.retry_after import retry_after_seconds
from colony.contracts import OUTPUT_CONTRACTS, QualificationScore
from colony.errors import (
    ModelRefused,
    OutputInvalid,
    OutputTruncated,
    ProviderError,
    ProviderUnavailable,
)
from colony.llm import StructuredRunner
from colony.ports import Message, ModelRequest
from colony.testing.fakes import RecordingSleep
from colony.testing.wire import (
    Reply,
    WireServer,
    error_reply,
    gemini_blocked_reply,
    gemini_content_reply,
    openai_chat_reply,
    sample_from_schema,
)

OPENAI_KEY = "sk-test-openai"
GEMINI_KEY = "g-test-gemini"
OPENAI_MODEL = "gpt-test-model"
GEMINI_MODEL = "gemini-test-model"
PROMPT_SECRET = "PROMPT-SECRET-7f3a"  # must never appear in an exception message

VALID = {
    "total_score": 72,
    "dimension_scores": {"size": 80, "vertical": 70, "tech_stack": 60, "signals": 75, "timing": 70},
    "disqualifiers": [],
    "recommendation": "qualify",
    "reasoning": "Strong fit on size and timing.",
}
OUT_OF_RANGE = {**VALID, "total_score": 150}
LOOKUP_TOOL = {
    "name": "lookup_account",
    "description": "Find an account by domain.",
    "parameters": {
        "type": "object",
        "properties": {"domain": {"type": "string"}},
        "required": ["domain"],
    },
}


def make_request(model: str, **overrides: Any) -> ModelRequest:
    options: dict[str, Any] = {
        "model": model,
        "messages": (
            Message("system", "You score prospects."),
            Message("system", "Answer in JSON."),
            Message("user", f"Score Acme. {PROMPT_SECRET}"),
        ),
        "output_name": "qualification_score",
        "output_schema": QualificationScore.model_json_schema(),
        "max_output_tokens": 321,
        "temperature": 0.25,
        **overrides,
    }
    return ModelRequest(**options)


def walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema node (dict) reachable through the schema keywords."""
    if isinstance(node, dict):
        yield node
        for key in ("$defs", "properties"):
            for sub in (node.get(key) or {}).values():
                yield from walk(sub)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                yield from walk(node[key])
        for key in ("anyOf", "prefixItems"):
            for sub in node.get(key) or ():
                yield from walk(sub)


# The local wire-protocol server (`server`) and a clean environment come from conftest.
pytestmark = [pytest.mark.usefixtures("no_ambient_config"), pytest.mark.covers("TECH-008")]


@pytest.fixture
def make_openai(server: WireServer) -> Iterator[Callable[..., OpenAIChatModel]]:
    made: list[OpenAIChatModel] = []

    def make(**kwargs: Any) -> OpenAIChatModel:
        # the stand-in speaks for OpenAI's own API unless a test says otherwise
        options: dict[str, Any] = {
            "api_key": OPENAI_KEY,
            "base_url": server.openai_base_url,
            "compatible": False,
        }
        model = OpenAIChatModel(**{**options, **kwargs})
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


@pytest.fixture
def make_gemini(server: WireServer) -> Iterator[Callable[..., GeminiChatModel]]:
    made: list[GeminiChatModel] = []

    def make(**kwargs: Any) -> GeminiChatModel:
        options: dict[str, Any] = {"api_key": GEMINI_KEY, "base_url": server.gemini_base_url}
        model = GeminiChatModel(**{**options, **kwargs})
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


# -- strict schema conversion (pure) ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OUTPUT_CONTRACTS))
def test_strict_schema_is_strict_for_every_contract(name: str) -> None:
    original = OUTPUT_CONTRACTS[name].model_json_schema()
    before = json.dumps(original, sort_keys=True)
    strict = strict_json_schema(original)

    assert json.dumps(original, sort_keys=True) == before  # the input is not modified
    assert strict["type"] == "object"
    for node in walk(strict):
        assert set(node) <= STRICT_KEYWORDS, set(node) - STRICT_KEYWORDS
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
        if "$ref" in node:
            assert set(node) == {"$ref"}
            assert node["$ref"].removeprefix("#/$defs/") in strict["$defs"]
    # An answer shaped exactly by the strict schema satisfies the pydantic contract.
    OUTPUT_CONTRACTS[name].model_validate(sample_from_schema(strict))


class _Sub(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int


class _Mixed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=10, title="A Name")
    note: str | None = None
    sub: _Sub | None = None
    level: Literal["low", "high"] | None = None
    tags: list[str] = Field(default_factory=list)
    kind: Literal["mixed"] = "mixed"
    when: date
    choice: _Sub | str


def test_strict_schema_makes_none_defaults_nullable_and_other_defaults_required() -> None:
    strict = strict_json_schema(_Mixed.model_json_schema())
    props = strict["properties"]

    assert strict["required"] == list(props)
    # minLength and maxLength are not strict keywords: said in words; the title dropped
    assert props["name"] == {"type": "string", "description": "1 to 10 characters."}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}  # no default
    assert props["sub"] == {"anyOf": [{"$ref": "#/$defs/_Sub"}, {"type": "null"}]}
    assert props["level"] == {
        "anyOf": [{"enum": ["low", "high"], "type": "string"}, {"type": "null"}]
    }
    # A non-null default: required and NOT nullable (null would break the contract).
    assert props["tags"] == {"items": {"type": "string"}, "type": "array"}
    assert props["kind"] == {"enum": ["mixed"], "type": "string"}
    # a format OpenAI knows is kept, and said in words too
    assert props["when"] == {
        "type": "string",
        "format": "date",
        "description": "An ISO date, YYYY-MM-DD.",
    }
    assert props["choice"] == {"anyOf": [{"$ref": "#/$defs/_Sub"}, {"type": "string"}]}
    assert strict["$defs"]["_Sub"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
        "additionalProperties": False,
    }


def test_strict_schema_nullable_forms_and_structural_rewrites() -> None:
    schema = {
        "type": "object",
        "properties": {
            "plain": {"type": "integer", "default": None},
            "typed_enum": {"type": "string", "enum": ["a"], "default": None},
            "multi": {"type": ["string", "integer"], "default": None},
            "untyped": {"default": None},
            "one": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "merged": {"allOf": [{"$ref": "#/$defs/D"}], "description": "wrapped"},
            "ref_sibling": {"$ref": "#/$defs/D", "description": "dropped"},
            "open_map": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        "required": ["one", "merged", "ref_sibling", "open_map"],
        "$defs": {"D": {"properties": {"y": {"type": "string"}}}},
    }
    props = strict_json_schema(schema)["properties"]

    assert props["plain"] == {"type": ["integer", "null"]}
    assert props["typed_enum"] == {"type": ["string", "null"], "enum": ["a", None]}
    assert props["multi"] == {"type": ["string", "integer", "null"]}
    assert props["untyped"] == {"anyOf": [{}, {"type": "null"}]}
    assert props["one"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["merged"] == {"$ref": "#/$defs/D"}
    assert props["ref_sibling"] == {"$ref": "#/$defs/D"}
    # Strict mode has no open maps: an object without properties admits only {}.
    assert props["open_map"] == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("qualification_score", "qualification_score"),
        ("call summary/v2", "call_summary_v2"),
        ("x" * 80, "x" * 64),
        ("", "output"),
    ],
)
def test_schema_name_is_what_openai_accepts(raw: str, expected: str) -> None:
    assert schema_name(raw) == expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"Retry-After-Ms": "250", "Retry-After": "9"}, 0.25),
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),  # a date in the past
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-1"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_seconds(headers: dict[str, str] | None, expected: float | None) -> None:
    assert retry_after_seconds(headers) == expected


def test_retry_after_seconds_reads_a_future_http_date() -> None:
    value = retry_after_seconds({"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"})
    assert value is not None and value > 1e9


def test_gemini_schema_keeps_only_supported_keywords() -> None:
    schema = gemini_json_schema(_Mixed.model_json_schema())
    for node in walk(schema):
        assert set(node) <= GEMINI_SCHEMA_KEYWORDS, set(node) - GEMINI_SCHEMA_KEYWORDS
    props = schema["properties"]
    assert props["name"] == {"type": "string", "description": "1 to 10 characters."}
    assert props["kind"] == {"enum": ["mixed"], "type": "string"}
    assert props["when"] == {
        "format": "date",
        "type": "string",
        "description": "An ISO date, YYYY-MM-DD.",
    }
    assert schema["required"] == ["name", "when", "choice"]  # optional stays optional
    assert gemini_json_schema({"$ref": "#/$defs/A", "description": "x"}) == {"$ref": "#/$defs/A"}


# -- OpenAI -------------------------------------------------------------------------------------


def test_openai_sends_a_strict_json_schema_request(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.script(
        openai_chat_reply(
            json.dumps(VALID), model="gpt-test-2024", prompt_tokens=40, completion_tokens=12
        )
    )
    request = make_request(OPENAI_MODEL)
    response = make_openai().request(request)

    [sent] = server.requests
    assert (sent.method, sent.path, sent.route) == (
        "POST",
        "/v1/chat/completions",
        "openai.chat.completions",
    )
    assert sent.header("Authorization") == f"Bearer {OPENAI_KEY}"
    assert sent.header("x-stainless-retry-count") == "0"
    body = sent.body
    assert body["model"] == OPENAI_MODEL
    assert body["messages"] == [
        {"role": "system", "content": "You score prospects."},
        {"role": "system", "content": "Answer in JSON."},
        {"role": "user", "content": f"Score Acme. {PROMPT_SECRET}"},
    ]
    assert body["max_completion_tokens"] == 321
    assert "max_tokens" not in body
    assert body["temperature"] == 0.25
    assert "tools" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "qualification_score",
            "schema": strict_json_schema(QualificationScore.model_json_schema()),
            "strict": True,
        },
    }
    assert response.text == json.dumps(VALID)
    assert (response.usage.tokens_in, response.usage.tokens_out) == (40, 12)
    assert response.model == "gpt-test-2024"
    assert response.tool_calls == ()


def test_openai_maps_tools_and_parses_tool_calls(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.script(openai_chat_reply(None, tool_calls=[("lookup_account", {"domain": "acme.io"})]))
    request = make_request(OPENAI_MODEL, tools=(LOOKUP_TOOL,))
    result = StructuredRunner(make_openai()).run(request, QualificationScore)

    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_account",
                "description": "Find an account by domain.",
                "parameters": LOOKUP_TOOL["parameters"],
            },
        }
    ]
    assert result.output is None
    [call] = result.tool_calls
    assert (call.name, dict(call.arguments), call.id) == (
        "lookup_account",
        {"domain": "acme.io"},
        "call_0",
    )


def test_openai_tool_call_with_malformed_arguments_is_output_invalid(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    reply = openai_chat_reply(None, tool_calls=[("lookup_account", {})])
    reply.body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{oops"
    server.script(reply)
    with pytest.raises(OutputInvalid, match="lookup_account"):
        make_openai().request(make_request(OPENAI_MODEL, tools=(LOOKUP_TOOL,)))


def test_openai_429_then_success_through_the_runner(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.fail(429, retry_after_ms=None)  # no Retry-After: the runner's own back-off
    server.script(openai_chat_reply(json.dumps(VALID), prompt_tokens=30, completion_tokens=10))
    sleep = RecordingSleep()
    result = StructuredRunner(make_openai(), sleep=sleep).run(
        make_request(OPENAI_MODEL), QualificationScore
    )

    assert len(server.requests) == 2
    assert [r.header("x-stainless-retry-count") for r in server.requests] == ["0", "0"]
    assert sleep.delays == [0.5]
    assert result.output == QualificationScore.model_validate(VALID)
    assert (result.attempts, result.repaired) == (2, False)
    assert (result.usage.tokens_in, result.usage.tokens_out) == (30, 10)


def test_openai_429_retry_after_header_sets_the_delay(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.fail(429, retry_after_ms=1500)
    server.fail(503, retry_after_ms=None, headers={"Retry-After": "8"})
    sleep = RecordingSleep()
    result = StructuredRunner(make_openai(), sleep=sleep, max_delay=8.0).run(
        make_request(OPENAI_MODEL), QualificationScore
    )

    assert sleep.delays == [1.5, 8.0]
    assert len(server.requests) == 3
    assert result.attempts == 3
    assert result.output is not None  # the default route answers from the schema


def test_openai_retry_after_beyond_a_short_wait_is_handed_back_not_slept(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.fail(429, retry_after_ms=None, headers={"Retry-After": "60"})
    sleep = RecordingSleep()
    with pytest.raises(ProviderUnavailable) as caught:
        StructuredRunner(make_openai(), sleep=sleep, max_delay=8.0).run(
            make_request(OPENAI_MODEL), QualificationScore
        )

    assert caught.value.retry_after == 60.0  # the caller's queue redelivers after it
    assert sleep.delays == [] and len(server.requests) == 1


def test_openai_invalid_answer_then_valid_one_is_repaired(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.script(
        openai_chat_reply(json.dumps(OUT_OF_RANGE), prompt_tokens=100, completion_tokens=20),
        openai_chat_reply(json.dumps(VALID), prompt_tokens=130, completion_tokens=21),
    )
    result = StructuredRunner(make_openai()).run(make_request(OPENAI_MODEL), QualificationScore)

    assert (result.attempts, result.repaired) == (2, True)
    assert result.output == QualificationScore.model_validate(VALID)
    assert (result.usage.tokens_in, result.usage.tokens_out) == (230, 41)
    first, second = (r.body["messages"] for r in server.requests)
    assert second[: len(first)] == first
    assistant, repair = second[len(first) :]
    assert assistant == {"role": "assistant", "content": json.dumps(OUT_OF_RANGE)}
    assert repair["role"] == "user"
    assert "total_score: Input should be less than or equal to 100" in repair["content"]
    assert "150" not in repair["content"]  # locations and messages, never input values
    assert server.requests[1].body["response_format"] == server.requests[0].body["response_format"]


def test_openai_persistent_invalid_json_is_output_invalid(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.script(openai_chat_reply("not json at all"), openai_chat_reply('{"total_score": '))
    with pytest.raises(OutputInvalid, match="QualificationScore") as caught:
        StructuredRunner(make_openai()).run(make_request(OPENAI_MODEL), QualificationScore)

    assert "not valid JSON" in str(caught.value)
    assert PROMPT_SECRET not in str(caught.value)
    assert len(server.requests) == 2
    assert "not valid JSON" in server.requests[1].body["messages"][-1]["content"]


def test_openai_500s_exhausted_raise_provider_unavailable(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.fail(500, times=3, retry_after_ms=None, message=f"boom {PROMPT_SECRET}")
    sleep = RecordingSleep()
    with pytest.raises(ProviderUnavailable, match="InternalServerError") as caught:
        StructuredRunner(make_openai(), max_attempts=3, sleep=sleep).run(
            make_request(OPENAI_MODEL), QualificationScore
        )

    assert isinstance(caught.value.__cause__, openai.InternalServerError)
    assert PROMPT_SECRET not in str(caught.value)
    assert len(server.requests) == 3
    assert sleep.delays == [0.5, 1.0]
    assert server.pending == 0


def test_openai_client_error_is_a_provider_error_and_not_retried(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    server.script(
        Reply(
            400,
            {
                "error": {
                    "message": f"bad request near {PROMPT_SECRET}",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                    "param": "messages",
                }
            },
        )
    )
    sleep = RecordingSleep()
    with pytest.raises(ProviderError) as caught:
        StructuredRunner(make_openai(), sleep=sleep).run(
            make_request(OPENAI_MODEL), QualificationScore
        )

    assert not isinstance(caught.value, ProviderUnavailable)
    assert str(caught.value) == (
        "OpenAI chat completion failed: BadRequestError (HTTP 400, code context_length_exceeded)"
    )
    assert len(server.requests) == 1
    assert sleep.delays == []


def test_openai_connection_refused_is_provider_unavailable() -> None:
    with WireServer() as closed:
        base_url = closed.openai_base_url  # nothing listens here once the block ends
    with (
        OpenAIChatModel(OPENAI_KEY, base_url=base_url) as model,
        pytest.raises(ProviderUnavailable, match="APIConnectionError") as caught,
    ):
        model.request(make_request(OPENAI_MODEL))
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)


def test_openai_timeout_is_provider_unavailable(
    server: WireServer, make_openai: Callable[..., OpenAIChatModel]
) -> None:
    release = threading.Event()

    def stall(request: Any) -> Reply:
        release.wait(30)
        return openai_chat_reply("{}")

    server.script(stall)
    try:
        with pytest.raises(ProviderUnavailable, match="APITimeoutError"):
            make_openai(timeout=0.2).request(make_request(OPENAI_MODEL))
    finally:
        release.set()
    assert len(server.requests) == 1


# -- Gemini -------------------------------------------------------------------------------------


def test_gemini_sends_generate_content_with_a_json_schema(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    reply = gemini_content_reply(json.dumps(VALID), prompt_tokens=50, candidates_tokens=14)
    reply.body["usageMetadata"]["thoughtsTokenCount"] = 6
    server.script(reply)
    messages = (
        Message("system", "You score prospects."),
        Message("user", f"Score Acme. {PROMPT_SECRET}"),
        Message("assistant", "{}"),
        Message("system", "Answer in JSON."),
        Message("user", "Again, properly."),
    )
    request = make_request(GEMINI_MODEL, messages=messages, thinking_budget=512)
    response = make_gemini().request(request)

    [sent] = server.requests
    assert sent.route == "gemini.generateContent"
    assert sent.path == f"/v1/models/{GEMINI_MODEL}:generateContent"  # google-genai 3.x: v1
    assert sent.header("x-goog-api-key") == GEMINI_KEY
    assert sent.header("Authorization") is None
    body = sent.body
    assert body["systemInstruction"]["parts"] == [
        {"text": "You score prospects.\n\nAnswer in JSON."}
    ]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": f"Score Acme. {PROMPT_SECRET}"}]},
        {"role": "model", "parts": [{"text": "{}"}]},
        {"role": "user", "parts": [{"text": "Again, properly."}]},
    ]
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": gemini_json_schema(QualificationScore.model_json_schema()),
        # the answer's 321 plus the explicit thinking budget, which thoughts are spent from
        "maxOutputTokens": 321 + 512,
        "thinkingConfig": {"thinking_budget": 512},
        "temperature": 0.25,
    }
    assert "tools" not in body
    assert response.text == json.dumps(VALID)
    assert (response.usage.tokens_in, response.usage.tokens_out) == (50, 14 + 6)
    assert response.model == "gemini-test"


def test_gemini_api_version_can_be_chosen(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    make_gemini(api_version="v1beta").request(make_request(GEMINI_MODEL))
    assert server.requests[0].path == f"/v1beta/models/{GEMINI_MODEL}:generateContent"


def test_gemini_maps_tools_and_parses_function_calls(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    server.script(gemini_content_reply(None, function_calls=[("lookup_account", {"domain": "a"})]))
    result = StructuredRunner(make_gemini()).run(
        make_request(GEMINI_MODEL, tools=(LOOKUP_TOOL,)), QualificationScore
    )

    [tool] = server.requests[0].body["tools"]
    [declaration] = tool["functionDeclarations"]
    assert declaration["name"] == "lookup_account"
    assert declaration["description"] == "Find an account by domain."
    # google-genai 3.6 sends this one key in proto snake_case (the API accepts both spellings).
    schema_keys = {"parametersJsonSchema", "parameters_json_schema"} & set(declaration)
    assert len(schema_keys) == 1
    assert declaration[schema_keys.pop()] == LOOKUP_TOOL["parameters"]
    assert result.output is None
    [call] = result.tool_calls
    assert (call.name, dict(call.arguments)) == ("lookup_account", {"domain": "a"})


def test_gemini_429_then_success_through_the_runner(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    server.fail(429, retry_after_ms=None)
    server.script(gemini_content_reply(json.dumps(VALID), prompt_tokens=30, candidates_tokens=9))
    sleep = RecordingSleep()
    result = StructuredRunner(make_gemini(), sleep=sleep).run(
        make_request(GEMINI_MODEL), QualificationScore
    )

    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert sleep.delays == [0.5]
    assert result.output == QualificationScore.model_validate(VALID)
    assert (result.usage.tokens_in, result.usage.tokens_out) == (30, 9)


def test_gemini_retry_delay_comes_from_headers_or_retry_info(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    server.fail(429, retry_after_ms=2000)
    quota = error_reply(429, "quota exhausted")
    quota.body["error"]["details"] = [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}
    ]
    server.script(quota)
    sleep = RecordingSleep()
    result = StructuredRunner(make_gemini(), sleep=sleep).run(
        make_request(GEMINI_MODEL), QualificationScore
    )

    assert sleep.delays == [2.0, 3.0]
    assert result.attempts == 3


def test_gemini_invalid_answer_then_valid_one_is_repaired(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    server.script(
        gemini_content_reply(json.dumps(OUT_OF_RANGE), prompt_tokens=100, candidates_tokens=20),
        gemini_content_reply(json.dumps(VALID), prompt_tokens=130, candidates_tokens=21),
    )
    result = StructuredRunner(make_gemini()).run(make_request(GEMINI_MODEL), QualificationScore)

    assert (result.attempts, result.repaired) == (2, True)
    assert (result.usage.tokens_in, result.usage.tokens_out) == (230, 41)
    first, second = (r.body["contents"] for r in server.requests)
    assert second[: len(first)] == first
    assistant, repair = second[len(first) :]
    assert assistant == {"role": "model", "parts": [{"text": json.dumps(OUT_OF_RANGE)}]}
    assert repair["role"] == "user"
    assert "total_score: Input should be less than or equal to 100" in repair["parts"][0]["text"]


def test_gemini_persistent_invalid_is_output_invalid(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    server.script(gemini_content_reply("```json"), gemini_content_reply("[]"))
    with pytest.raises(OutputInvalid, match="QualificationScore") as caught:
        StructuredRunner(make_gemini()).run(make_request(GEMINI_MODEL), QualificationScore)

    assert "(root): Input should be a valid dictionary" in str(caught.value)
    assert PROMPT_SECRET not in str(caught.value)
    assert len(server.requests) == 2


def test_gemini_500s_exhausted_raise_provider_unavailable(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    server.fail(500, times=4, retry_after_ms=None, message=f"boom {PROMPT_SECRET}")
    sleep = RecordingSleep()
    with pytest.raises(ProviderUnavailable, match="ServerError") as caught:
        StructuredRunner(make_gemini(), sleep=sleep).run(
            make_request(GEMINI_MODEL), QualificationScore
        )

    assert isinstance(caught.value.__cause__, genai_errors.ServerError)
    assert PROMPT_SECRET not in str(caught.value)
    assert len(server.requests) == 4  # the runner's max_attempts; the SDK retried nothing
    assert sleep.delays == [0.5, 1.0, 2.0]


def test_gemini_client_error_is_a_provider_error_and_not_retried(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    server.fail(400, message=f"API key not valid {PROMPT_SECRET}", retry_after_ms=None)
    with pytest.raises(ProviderError) as caught:
        StructuredRunner(make_gemini()).run(make_request(GEMINI_MODEL), QualificationScore)

    assert not isinstance(caught.value, ProviderUnavailable)
    assert str(caught.value) == (
        "Gemini generate_content failed: ClientError (HTTP 400, INVALID_ARGUMENT)"
    )
    assert len(server.requests) == 1


# -- truncation and refusals, per SDK: each a clear outcome, never "not JSON" ----------------

CUT = json.dumps(VALID)[:40]  # what an answer stopped at its token cap looks like


def _cut(sdk: str) -> Reply:
    if sdk == "openai":
        return openai_chat_reply(CUT, finish_reason="length")
    return gemini_content_reply(CUT, finish_reason="MAX_TOKENS")


def _whole(sdk: str) -> Reply:
    if sdk == "openai":
        return openai_chat_reply(json.dumps(VALID))
    return gemini_content_reply(json.dumps(VALID))


def _cap(sdk: str, request: Any) -> int:
    """The output token cap the SDK sent."""
    if sdk == "openai":
        return int(request.body["max_completion_tokens"])
    return int(request.body["generationConfig"]["maxOutputTokens"])


@pytest.fixture
def make_model(
    make_openai: Callable[..., OpenAIChatModel], make_gemini: Callable[..., GeminiChatModel]
) -> Callable[[str], Any]:
    return lambda sdk: make_openai() if sdk == "openai" else make_gemini()


def _model_name(sdk: str) -> str:
    return OPENAI_MODEL if sdk == "openai" else GEMINI_MODEL


@pytest.mark.parametrize("sdk", ["openai", "gemini"])
def test_a_truncated_answer_is_asked_for_again_with_twice_the_cap(
    sdk: str, server: WireServer, make_model: Callable[[str], Any]
) -> None:
    server.script(_cut(sdk), _whole(sdk))
    result = StructuredRunner(make_model(sdk)).run(
        make_request(_model_name(sdk)), QualificationScore
    )

    assert result.output == QualificationScore.model_validate(VALID)
    assert [_cap(sdk, r) for r in server.requests] == [321, 642]
    assert result.repaired is False  # a larger cap, not a "repair" of a fragment


@pytest.mark.parametrize("sdk", ["openai", "gemini"])
def test_truncated_twice_is_truncated_not_invalid_json(
    sdk: str, server: WireServer, make_model: Callable[[str], Any]
) -> None:
    server.script(_cut(sdk), _cut(sdk))
    with pytest.raises(OutputTruncated, match="cut at 642 output tokens") as caught:
        StructuredRunner(make_model(sdk)).run(make_request(_model_name(sdk)), QualificationScore)

    assert caught.value.code == "truncated"
    assert len(server.requests) == 2  # no repair round on a fragment
    assert PROMPT_SECRET not in str(caught.value)


def _refusal(sdk: str, kind: str) -> Reply:
    if sdk == "openai" and kind == "answer":  # strict structured outputs' refusal
        return openai_chat_reply(None, refusal=f"I can't help with {PROMPT_SECRET}.")
    if sdk == "openai":  # OpenAI's moderation stopped the answer
        return openai_chat_reply("", finish_reason="content_filter")
    if kind == "answer":
        return gemini_content_reply(None, finish_reason="SAFETY")
    return gemini_blocked_reply("PROHIBITED_CONTENT")


@pytest.mark.parametrize(
    ("sdk", "kind", "reason"),
    [
        ("openai", "answer", "refusal"),
        ("openai", "filter", "content_filter"),
        ("gemini", "answer", "SAFETY"),
        ("gemini", "prompt", "prompt:PROHIBITED_CONTENT"),
    ],
)
def test_a_refusal_or_safety_block_is_refused_at_once_with_the_providers_reason(
    sdk: str, kind: str, reason: str, server: WireServer, make_model: Callable[[str], Any]
) -> None:
    server.script(_refusal(sdk, kind))
    with pytest.raises(ModelRefused) as caught:
        StructuredRunner(make_model(sdk)).run(make_request(_model_name(sdk)), QualificationScore)

    assert (caught.value.code, caught.value.reason) == ("refused", reason)
    assert len(server.requests) == 1  # never retried, never "repaired" as invalid JSON
    assert PROMPT_SECRET not in str(caught.value)  # the refusal's own text is not kept


def test_gemini_timeout_is_provider_unavailable(
    server: WireServer, make_gemini: Callable[..., GeminiChatModel]
) -> None:
    release = threading.Event()

    def stall(request: Any) -> Reply:
        release.wait(30)
        return gemini_content_reply("{}")

    server.script(stall)
    try:
        with pytest.raises(ProviderUnavailable, match="Timeout"):
            make_gemini(timeout=0.2).request(make_request(GEMINI_MODEL))
    finally:
        release.set()


# -- the wire server's default answers ----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OUTPUT_CONTRACTS))
def test_default_wire_answers_validate_for_every_contract(
    name: str,
    make_openai: Callable[..., OpenAIChatModel],
    make_gemini: Callable[..., GeminiChatModel],
) -> None:
    contract = OUTPUT_CONTRACTS[name]
    for model, model_name in ((make_openai(), OPENAI_MODEL), (make_gemini(), GEMINI_MODEL)):
        request = make_request(
            model_name, output_name=name, output_schema=contract.model_json_schema()
        )
        result = StructuredRunner(model).run(request, contract)
        assert isinstance(result.output, contract)
        assert (result.attempts, result.repaired) == (1, False)
        assert result.usage.tokens_in > 0


@pytest.mark.parametrize("sdk", ["openai", "gemini"])
def test_a_calls_own_timeout_bounds_it_whatever_the_clients_default(
    sdk: str, server: WireServer, make_model: Callable[[str], Any]
) -> None:
    release = threading.Event()

    def stall(request: Any) -> Reply:
        release.wait(30)
        return _whole(sdk)

    server.script(stall)
    model = make_model(sdk)  # its client's default timeout is 120 s
    try:
        with pytest.raises(ProviderUnavailable, match="Timeout"):
            model.request(make_request(_model_name(sdk), timeout_seconds=0.3))
    finally:
        release.set()
