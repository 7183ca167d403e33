"""``StructuredRunner`` against a scripted ``ChatModel``: back-off, validation, one repair."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from pydantic import ValidationError

from colony.contracts import DailyBrief, OutboundMessage, QualificationScore
from colony.deadline import DEFAULT_CALL_SECONDS
from colony.errors import OutputInvalid, ProviderError, ProviderUnavailable
from colony.llm import RunResult, StructuredRunner, validation_problems
from colony.llm.answers import answer_schema
from colony.ports import ChatModel, Message, ModelRequest, ModelResponse, ToolCall, Usage
from colony.testing.fakes import SCRIPTED_USAGE, RecordingSleep, ScriptedChatModel

PROMPT_SECRET = "PROMPT-SECRET-91c2"
VALID = {
    "total_score": 72,
    "dimension_scores": {"size": 80, "vertical": 70, "tech_stack": 60, "signals": 75, "timing": 70},
    "disqualifiers": [],
    "recommendation": "qualify",
    "reasoning": "Strong fit on size and timing.",
}
MESSAGE = {
    "subject": "Your Denver expansion",
    "body": "Saw the new Denver office. Worth a call?",
    "angle_used": "Signal",
    "signal_referenced": "Denver office lease",
}


def make_request(**overrides: Any) -> ModelRequest:
    options: dict[str, Any] = {
        "model": "test-model",
        "messages": (
            Message("system", "You score prospects."),
            Message("user", f"Score Acme. {PROMPT_SECRET}"),
        ),
        "output_name": "qualification_score",
        "output_schema": QualificationScore.model_json_schema(),
        **overrides,
    }
    return ModelRequest(**options)


def as_sent(request: ModelRequest) -> ModelRequest:
    """``request`` as the runner sends it: its contract or missing_data, inside ``answer``,
    and a timeout of its own (outside a window, a default function's)."""
    schema = answer_schema(request.output_schema)
    return replace(request, output_schema=schema, timeout_seconds=DEFAULT_CALL_SECONDS)


def runner(model: ChatModel, **kwargs: Any) -> tuple[StructuredRunner, RecordingSleep]:
    sleep = RecordingSleep()
    return StructuredRunner(model, sleep=sleep, **kwargs), sleep


def unavailable(retry_after: float | None = None) -> ProviderUnavailable:
    return ProviderUnavailable("scripted 429", retry_after=retry_after)


# -- the happy path -----------------------------------------------------------------------------


def test_a_valid_first_answer_is_returned_validated() -> None:
    model = ScriptedChatModel(VALID, model="m-2024")
    run, sleep = runner(model)
    result = run.run(make_request(), QualificationScore)

    assert isinstance(result, RunResult)
    assert result.output == QualificationScore.model_validate(VALID)
    assert result.usage == SCRIPTED_USAGE
    assert (result.model, result.attempts, result.repaired, result.tool_calls) == (
        "m-2024",
        1,
        False,
        (),
    )
    assert model.requests == [as_sent(make_request())]
    assert sleep.delays == []


def test_tool_calls_with_empty_text_are_returned_without_output() -> None:
    call = ToolCall(name="lookup_account", arguments={"domain": "acme.io"}, id="c1")
    model = ScriptedChatModel(ModelResponse(" ", Usage(7, 3), "m", tool_calls=(call,)))
    result = StructuredRunner(model).run(make_request(), QualificationScore)

    assert result.output is None
    assert result.tool_calls == (call,)
    assert (result.attempts, result.repaired, result.usage) == (1, False, Usage(7, 3))


def test_tool_calls_next_to_a_valid_answer_are_kept() -> None:
    call = ToolCall(name="log", arguments={})
    model = ScriptedChatModel(ModelResponse(json.dumps(VALID), Usage(1, 1), "m", (call,)))
    result = StructuredRunner(model).run(make_request(), QualificationScore)

    assert result.output is not None
    assert result.tool_calls == (call,)


# -- back-off -----------------------------------------------------------------------------------


def test_unavailable_is_retried_with_exponential_backoff() -> None:
    model = ScriptedChatModel(unavailable(), unavailable(), VALID)
    run, sleep = runner(model)
    result = run.run(make_request(), QualificationScore)

    assert sleep.delays == [0.5, 1.0]
    assert result.attempts == 3
    assert result.usage == SCRIPTED_USAGE  # failed attempts carry no usage
    assert len(model.requests) == 3
    assert all(r == as_sent(make_request()) for r in model.requests)


def test_backoff_is_capped_at_max_delay() -> None:
    model = ScriptedChatModel(*[unavailable()] * 6, VALID)
    run, sleep = runner(model, max_attempts=7, base_delay=0.5, max_delay=8.0)
    run.run(make_request(), QualificationScore)

    assert sleep.delays == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


@pytest.mark.parametrize(("retry_after", "expected"), [(3.0, 3.0), (8.0, 8.0), (0.0, 0.0)])
def test_retry_after_within_a_short_wait_is_slept(retry_after: float, expected: float) -> None:
    run, sleep = runner(ScriptedChatModel(unavailable(retry_after), VALID))
    run.run(make_request(), QualificationScore)

    assert sleep.delays == [expected]


def test_a_longer_retry_after_is_handed_back_at_once_not_slept() -> None:
    longer = unavailable(100.0)
    model = ScriptedChatModel(longer, VALID)
    run, sleep = runner(model, max_delay=8.0)
    with pytest.raises(ProviderUnavailable) as caught:
        run.run(make_request(), QualificationScore)

    assert caught.value is longer and caught.value.retry_after == 100.0
    assert sleep.delays == [] and len(model.requests) == 1


def test_exhausted_retries_re_raise_the_last_unavailable() -> None:
    last = unavailable(1.0)
    model = ScriptedChatModel(unavailable(), unavailable(), last)
    run, sleep = runner(model, max_attempts=3)
    with pytest.raises(ProviderUnavailable) as caught:
        run.run(make_request(), QualificationScore)

    assert caught.value is last
    assert len(model.requests) == 3
    assert sleep.delays == [0.5, 1.0]


def test_other_provider_errors_propagate_without_retry() -> None:
    model = ScriptedChatModel(ProviderError("HTTP 400"), VALID)
    run, sleep = runner(model)
    with pytest.raises(ProviderError, match="HTTP 400"):
        run.run(make_request(), QualificationScore)

    assert len(model.requests) == 1
    assert sleep.delays == []
    assert model.pending == 1


def test_the_repair_call_has_its_own_retry_budget() -> None:
    model = ScriptedChatModel("nope", unavailable(), unavailable(), VALID)
    run, sleep = runner(model, max_attempts=3)
    result = run.run(make_request(), QualificationScore)

    assert (result.attempts, result.repaired) == (4, True)
    assert sleep.delays == [0.5, 1.0]


def test_max_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        StructuredRunner(ScriptedChatModel(), max_attempts=0)


# -- validation and repair ----------------------------------------------------------------------


def test_invalid_json_is_repaired_once_with_the_error_in_a_user_message() -> None:
    model = ScriptedChatModel(
        ModelResponse("Sure! Here it is: {", Usage(100, 20), "m"),
        ModelResponse(json.dumps(VALID), Usage(130, 25), "m-final"),
    )
    result = StructuredRunner(model).run(make_request(), QualificationScore)

    assert result.output == QualificationScore.model_validate(VALID)
    assert (result.attempts, result.repaired, result.model) == (2, True, "m-final")
    assert result.usage == Usage(230, 45)
    first, second = model.requests
    assert second.messages[:-2] == first.messages
    assistant, repair = second.messages[-2:]
    assert assistant == Message("assistant", "Sure! Here it is: {")
    assert repair.role == "user"
    assert "not valid JSON" in repair.content
    assert "`qualification_score`" in repair.content
    assert "corrected JSON object" in repair.content
    # Everything but the conversation is unchanged.
    assert (second.model, second.output_name, second.output_schema) == (
        first.model,
        first.output_name,
        first.output_schema,
    )


def test_the_repair_message_lists_locations_and_messages_but_no_input_values() -> None:
    invalid = {
        **VALID,
        "total_score": 150,
        "recommendation": "maybe-TOP-SECRET",
        "leaked_field": "TOP-SECRET-VALUE",
    }
    model = ScriptedChatModel(invalid, VALID)
    StructuredRunner(model).run(make_request(), QualificationScore)

    repair = model.requests[1].messages[-1].content
    assert "- total_score: Input should be less than or equal to 100" in repair
    assert "- recommendation: Input should be 'qualify', 'hold' or 'disqualify'" in repair
    assert "- leaked_field: Extra inputs are not permitted" in repair
    assert "TOP-SECRET" not in repair
    assert "150" not in repair


def test_a_model_validator_error_is_reported_at_the_root() -> None:
    disqualified_but_scored = {**VALID, "disqualifiers": ["competitor"]}
    model = ScriptedChatModel(disqualified_but_scored, disqualified_but_scored)
    with pytest.raises(OutputInvalid) as caught:
        StructuredRunner(model).run(make_request(), QualificationScore)

    assert "(root): Value error, a prospect with disqualifiers must score 0" in str(caught.value)


def test_persistent_invalid_output_raises_output_invalid_without_prompt_text() -> None:
    model = ScriptedChatModel({"total_score": "high"}, "[1, 2]")
    with pytest.raises(OutputInvalid) as caught:
        StructuredRunner(model).run(make_request(), QualificationScore)

    message = str(caught.value)
    assert message.startswith("QualificationScore answer still invalid after one repair attempt:")
    assert "(root): Input should be a valid dictionary" in message
    assert PROMPT_SECRET not in message
    assert len(model.requests) == 2


def test_output_invalid_shows_the_first_three_problems() -> None:
    wrong = {"recommendation": "maybe"}
    model = ScriptedChatModel(wrong, wrong)
    with pytest.raises(OutputInvalid) as caught:
        StructuredRunner(model).run(make_request(), QualificationScore)

    message = str(caught.value)
    assert "total_score: Field required; dimension_scores: Field required" in message
    assert "; and 1 more" in message  # three required fields missing, one value wrong


def test_validation_problems_helper_formats_nested_locations() -> None:
    invalid = {**VALID, "dimension_scores": {**VALID["dimension_scores"], "size": -1}}
    with pytest.raises(ValidationError) as caught:
        QualificationScore.model_validate(invalid)
    assert validation_problems(caught.value) == [
        "dimension_scores.size: Input should be greater than or equal to 0"
    ]


# -- policy checks ------------------------------------------------------------------------------


def no_question_marks(message: OutboundMessage) -> list[str]:
    return ["CONST-006: the body must not end with a question"] if "?" in message.body else []


def test_check_problems_are_repaired_like_validation_errors() -> None:
    fixed = {**MESSAGE, "body": "Saw the new Denver office. Happy to share what peers did."}
    model = ScriptedChatModel(MESSAGE, fixed)
    seen: list[OutboundMessage] = []

    def check(message: OutboundMessage) -> list[str]:
        seen.append(message)
        return no_question_marks(message)

    result = StructuredRunner(model).run(
        make_request(output_name="outbound_message"), OutboundMessage, check=check
    )

    assert result.output == OutboundMessage.model_validate(fixed)
    assert (result.attempts, result.repaired) == (2, True)
    assert [m.body for m in seen] == [MESSAGE["body"], fixed["body"]]
    repair = model.requests[1].messages[-1].content
    assert "- CONST-006: the body must not end with a question" in repair
    assert "`outbound_message`" in repair


def test_persistent_check_problems_raise_output_invalid() -> None:
    model = ScriptedChatModel(MESSAGE, MESSAGE)
    with pytest.raises(OutputInvalid, match=r"OutboundMessage .*CONST-006"):
        StructuredRunner(model).run(
            make_request(output_name="outbound_message"), OutboundMessage, check=no_question_marks
        )


def test_check_is_not_called_on_invalid_output() -> None:
    calls: list[Any] = []
    model = ScriptedChatModel({"subject": ""}, MESSAGE)
    StructuredRunner(model).run(
        make_request(output_name="outbound_message"),
        OutboundMessage,
        check=lambda m: calls.append(m) or [],
    )
    assert len(calls) == 1


def test_contract_validators_still_apply_without_a_check() -> None:
    long_brief = {k: "word " * 60 for k in DailyBrief.model_fields}
    short_brief = {k: "short" for k in DailyBrief.model_fields}
    model = ScriptedChatModel(long_brief, short_brief)
    result = StructuredRunner(model).run(make_request(output_name="daily_brief"), DailyBrief)

    assert result.repaired
    assert "the brief has 300 words" in model.requests[1].messages[-1].content


# -- the fake itself ----------------------------------------------------------------------------


def test_scripted_chat_model_accepts_callables_and_reports_exhaustion() -> None:
    model = ScriptedChatModel(lambda request: {"echo": request.model})
    assert json.loads(model.request(make_request()).text) == {"echo": "test-model"}
    with pytest.raises(AssertionError, match="no answer left"):
        model.request(make_request())
    model.push("{}")
    assert model.pending == 1
    assert isinstance(model, ChatModel)
