"""Structured calls over the ``ChatModel`` port: back-off, validation, one repair.

``StructuredRunner.run`` sends a ``ModelRequest`` and returns the answer validated against a
pydantic contract:

* ``ProviderUnavailable`` (429, 5xx, timeouts) is retried with capped exponential back-off
  up to ``max_attempts`` calls, then re-raised. A ``retry_after`` the provider sent is
  waited for when it is at most ``max_delay``; a longer one is re-raised at once (the
  caller's queue redelivers later: a function must not sleep through its timeout). Any
  other ``ProviderError`` propagates at once.
* Inside an invocation's model window (``colony.deadline``) no attempt or back-off
  outlasts it: ``ProviderUnavailable``.
* An answer cut at ``max_output_tokens`` (``finish == "length"``) is asked for once more
  with twice the cap (at most ``MAX_OUTPUT_TOKENS``); cut again, ``OutputTruncated``. A
  refusal or a safety block (``finish == "refused"``) is ``ModelRefused`` at once, with the
  provider's reason category: asking again, or "repairing" it as invalid JSON, would only
  be refused again.
* The answer text is parsed as JSON and validated with ``contract.model_validate``, then by
  the optional ``check`` (deterministic policy rules returning problem strings).
* A parse, validation or check failure is repaired ONCE: the conversation is extended with
  the invalid answer and a user message listing the problems (locations and messages, never
  input values, but how long a too-long text was and the form a date takes), sampled at
  ``REPAIR_TEMPERATURE`` at least: a small model at temperature 0 shown its own answer tends
  to give it back byte for byte (10 of 12 repairs did, issue 37 item 6). A second failure
  raises ``OutputInvalid``.
* An answer with tool calls and no text is returned as it is, with ``output=None``.
* With a ``stream`` (``AnswerStream``), every call goes through ``ChatModel.stream`` and its
  text fragments are fed to it as they arrive; before any call after the first (a retry, a
  larger cap, the repair) the stream is told to ``restart``: what it was fed so far is not
  the answer.
* CONST-004: every contract's answer may instead be a valid ``missing_data`` object (the
  system prompt asks for one when a required field is absent): that is ``DataMissing``,
  naming the fields, at once; never repaired into a guess. The schema sent says so
  (``colony.llm.answers``: the contract or a ``missing_data`` object, inside ``answer``), so
  a provider that enforces its schema can give that answer too.
* Every attempt has a timeout (``colony.deadline.call_timeout``): what is left of the
  invocation's window, or outside one the window a default function has.

Usage is summed over every answer received (the repair included). Exception messages name the
contract and the problems, never prompt text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from colony.contracts.outputs.common import MissingData
from colony.deadline import MIN_CALL_SECONDS, call_timeout, time_left
from colony.errors import (
    DataMissing,
    ModelRefused,
    OutputInvalid,
    OutputTruncated,
    ProviderUnavailable,
)
from colony.llm.answers import answer_schema, unwrap, wrapped
from colony.ports import ChatModel, Message, ModelRequest, ModelResponse, ToolCall, Usage

T = TypeVar("T", bound=BaseModel)
Check = Callable[[T], Sequence[str]]

MAX_LISTED_PROBLEMS = 10  # in the repair prompt
MAX_REPORTED_PROBLEMS = 3  # in the OutputInvalid message
MAX_OUTPUT_TOKENS = 16_384  # the larger cap a truncated answer is retried with, at most
REPAIR_TEMPERATURE = 0.4  # the repair's temperature at least (see the module docstring)


class AnswerStream(Protocol):
    """Where a streamed call's raw answer text goes as it arrives (``StructuredRunner.run``)."""

    def feed(self, fragment: str) -> None:
        """The next fragment of the current attempt's answer text."""
        ...

    def restart(self) -> None:
        """A new attempt begins: the text fed so far is not the answer."""
        ...


@dataclass(frozen=True, slots=True)
class RunResult(Generic[T]):
    """A validated answer (``output``), or ``output=None`` with the model's ``tool_calls``.

    ``attempts`` counts every request sent to the model (back-off retries and the repair
    included); ``repaired`` is true when the first answer was rejected and the repair taken.
    """

    output: T | None
    usage: Usage
    model: str
    attempts: int
    repaired: bool
    tool_calls: tuple[ToolCall, ...] = ()


def validation_problems(error: ValidationError) -> list[str]:
    """``loc: message`` for each pydantic error, without the offending input values: a text
    over its limit says how long it was, a date how it is written."""
    problems: list[str] = []
    for item in error.errors(include_url=False, include_context=False):
        location = ".".join(str(part) for part in item["loc"]) or "(root)"
        problem = f"{location}: {item['msg']}"
        given = item.get("input")
        if item["type"] == "string_too_long" and isinstance(given, str):
            problem += f" (it has {len(given)}: shorten it)"
        elif item["type"].startswith("date"):
            problem += " (write an ISO date, YYYY-MM-DD, or null when the data gives none)"
        problems.append(problem)
    return problems


def repair_message(output_name: str, problems: Sequence[str]) -> str:
    listed = "\n".join(f"- {p}" for p in problems[:MAX_LISTED_PROBLEMS])
    more = len(problems) - MAX_LISTED_PROBLEMS
    if more > 0:
        listed += f"\n- ... and {more} more"
    return (
        f"Your previous answer is not a valid `{output_name}` object:\n{listed}\n"
        "Reply with the corrected JSON object only: no prose, no code fences, "
        "matching the schema exactly."
    )


class StructuredRunner:
    """Runs structured requests through a ``ChatModel`` (see the module docstring)."""

    def __init__(
        self,
        model: ChatModel,
        *,
        max_attempts: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.model = model
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._sleep = sleep
        self._clock = clock

    def backoff(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first retry)."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_delay))
        return min(self.base_delay * 2**retry, self.max_delay)

    def run(
        self,
        request: ModelRequest,
        contract: type[T],
        *,
        check: Check[T] | None = None,
        stream: AnswerStream | None = None,
    ) -> RunResult[T]:
        calls = _Calls(stream)
        if wrapped(request.output_name):  # the contract, or CONST-004's missing_data
            request = replace(request, output_schema=answer_schema(request.output_schema))
        request, response = self._answer(request, contract, calls)
        if response.tool_calls and not response.text.strip():
            return calls.result(None, response, repaired=False)
        output, problems = _evaluate(response.text, contract, check)
        if output is not None and not problems:
            return calls.result(output, response, repaired=False)

        repair = replace(
            request,
            messages=(
                *request.messages,
                Message("assistant", response.text or "(empty answer)"),
                Message("user", repair_message(request.output_name, problems)),
            ),
            temperature=max(request.temperature, REPAIR_TEMPERATURE),
        )
        _, response = self._answer(repair, contract, calls)
        if response.tool_calls and not response.text.strip():
            return calls.result(None, response, repaired=True)
        output, problems = _evaluate(response.text, contract, check)
        if output is not None and not problems:
            return calls.result(output, response, repaired=True)
        shown = "; ".join(problems[:MAX_REPORTED_PROBLEMS])
        more = len(problems) - MAX_REPORTED_PROBLEMS
        if more > 0:
            shown += f"; and {more} more"
        raise OutputInvalid(
            f"{contract.__name__} answer still invalid after one repair attempt: {shown}"
        )

    def _answer(
        self, request: ModelRequest, contract: type[T], calls: _Calls
    ) -> tuple[ModelRequest, ModelResponse]:
        """One answer that is neither refused nor cut short, and the request that got it
        (with the larger cap when the first answer was truncated)."""
        response = self._call(request, calls)
        if response.finish == "length" and request.max_output_tokens < MAX_OUTPUT_TOKENS:
            larger = min(request.max_output_tokens * 2, MAX_OUTPUT_TOKENS)
            request = replace(request, max_output_tokens=larger)
            response = self._call(request, calls)
        if response.finish == "refused":
            reason = response.refusal or "refusal"
            raise ModelRefused(
                f"the model refused the {contract.__name__} answer ({reason})", reason=reason
            )
        if response.finish == "length":
            raise OutputTruncated(
                f"{contract.__name__} answer cut at {request.max_output_tokens} output tokens"
                " twice; raise the agent's output cap (colony.registry.agents)"
            )
        return request, response

    def _call(self, request: ModelRequest, calls: _Calls) -> ModelResponse:
        for attempt in range(self.max_attempts):
            left = time_left(self._clock)
            if left is not None and left < MIN_CALL_SECONDS:
                raise ProviderUnavailable(
                    f"{left:.0f} s left of this invocation's model window: not enough for"
                    " another call; the transport redelivers later"
                )
            if calls.attempts and calls.stream is not None:
                calls.stream.restart()
            calls.attempts += 1
            timeout = call_timeout(self._clock)
            if request.timeout_seconds is not None:
                timeout = min(timeout, request.timeout_seconds)
            timed = replace(request, timeout_seconds=timeout)
            try:
                if calls.stream is None:
                    response = self.model.request(timed)
                else:
                    response = self.model.stream(timed, calls.stream.feed)
            except ProviderUnavailable as error:
                wait = error.retry_after
                if attempt + 1 >= self.max_attempts or (wait is not None and wait > self.max_delay):
                    raise
                delay = self.backoff(attempt, wait)
                left = time_left(self._clock)
                if left is not None and delay > left - MIN_CALL_SECONDS:
                    raise  # the wait would outlast the window: hand it back now
                self._sleep(delay)
                continue
            calls.add(response.usage)
            return response
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


class _Calls:
    """Running totals for one ``run``."""

    def __init__(self, stream: AnswerStream | None) -> None:
        self.stream = stream
        self.attempts = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.tokens_cached = 0

    def add(self, usage: Usage) -> None:
        self.tokens_in += usage.tokens_in
        self.tokens_out += usage.tokens_out
        self.tokens_cached += usage.tokens_cached

    def result(self, output: T | None, response: ModelResponse, *, repaired: bool) -> RunResult[T]:
        return RunResult(
            output=output,
            usage=Usage(self.tokens_in, self.tokens_out, self.tokens_cached),
            model=response.model,
            attempts=self.attempts,
            repaired=repaired,
            tool_calls=response.tool_calls,
        )


def _evaluate(text: str, contract: type[T], check: Check[T] | None) -> tuple[T | None, list[str]]:
    """The validated output and its problems (parse errors, validation errors, check rules);
    ``DataMissing`` for a valid ``missing_data`` answer to any other contract."""
    try:
        data = unwrap(json.loads(text))
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        return None, [f"(root): the answer is not valid JSON ({error.msg} at {where})"]
    if (
        contract is not MissingData
        and isinstance(data, dict)
        and data.get("kind") == "missing_data"
    ):
        try:
            missing = MissingData.model_validate(data)
        except ValidationError as error:
            return None, validation_problems(error)
        fields = tuple(missing.missing_fields)
        raise DataMissing(
            f"the {contract.__name__} answer reports missing data: {', '.join(fields)}",
            fields=fields,
        )
    try:
        output = contract.model_validate(data)
    except ValidationError as error:
        return None, validation_problems(error)
    problems = [str(p) for p in check(output)] if check is not None else []
    return output, problems
