"""OpenAI's streamed chat completion put back together: text deltas handed on as they come,
tool calls assembled by index, usage from the last chunk (``stream_options.include_usage``).

Apart from ``colony.adapters.openai_chat`` only to keep that module short; the adapter's
``stream`` is the one user.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from colony.errors import ProviderUnavailable, ToolCallInvalid
from colony.ports import ModelResponse, TextSink, ToolCall, Usage


def tool_arguments(name: str, raw: str | None) -> dict[str, Any]:
    """A tool call's arguments, which OpenAI sends as JSON text (streamed: in pieces)."""
    try:
        arguments = json.loads(raw or "{}")
    except json.JSONDecodeError as error:
        raise ToolCallInvalid(
            f"OpenAI tool call {name!r} has arguments that are not JSON"
        ) from error
    if not isinstance(arguments, dict):
        raise ToolCallInvalid(f"OpenAI tool call {name!r} has arguments that are not an object")
    return arguments


def openai_usage(usage: Any) -> Usage:
    """A completion's ``usage`` (or its stream's last chunk's) as ours: the part of the prompt
    OpenAI's cache served is ``prompt_tokens_details.cached_tokens`` (0 where a server sends
    no details, as OpenAI-compatible ones without a cache do)."""
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
        tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
        tokens_cached=int(getattr(details, "cached_tokens", 0) or 0),
    )


class StreamedCompletion:
    """A ``chat.completion`` rebuilt from its ``chat.completion.chunk`` stream."""

    def __init__(self, requested_model: str) -> None:
        self.model = requested_model
        self.text: list[str] = []
        self.refusal = False
        self.finish_reason: str | None = None
        self.calls: dict[int, dict[str, Any]] = {}  # by the delta's index, in first-seen order
        self.usage = Usage(0, 0)
        self.sink_error: BaseException | None = None

    def add(self, chunk: Any, on_text: TextSink) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage is not None:  # the last chunk (include_usage), with no choices
            self.usage = openai_usage(usage)
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            delta = choice.delta
            if getattr(delta, "refusal", None):
                self.refusal = True  # its text is the model's: only the fact is kept
            if delta.content:
                self.text.append(delta.content)
                try:
                    on_text(delta.content)
                except BaseException as error:
                    self.sink_error = error
                    raise
            for piece in getattr(delta, "tool_calls", None) or []:
                call = self.calls.setdefault(piece.index, {"id": None, "name": "", "args": []})
                call["id"] = piece.id or call["id"]
                function = piece.function
                if function is not None:
                    call["name"] += function.name or ""
                    call["args"].append(function.arguments or "")
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def response(self) -> ModelResponse:
        if self.finish_reason is None:  # the connection ended before the answer did
            raise ProviderUnavailable("OpenAI's chat completion stream ended before its finish")
        tool_calls = tuple(
            ToolCall(
                name=c["name"], arguments=tool_arguments(c["name"], "".join(c["args"])), id=c["id"]
            )
            for c in self.calls.values()
        )
        finish: Literal["stop", "length", "refused"] = "stop"
        refusal = None
        if self.refusal:
            finish, refusal = "refused", "refusal"
        elif self.finish_reason == "content_filter":
            finish, refusal = "refused", "content_filter"
        elif self.finish_reason == "length":
            finish = "length"
        return ModelResponse(
            text="".join(self.text),
            usage=self.usage,
            model=self.model,
            tool_calls=tool_calls,
            finish=finish,
            refusal=refusal,
        )
