"""The ``ChatModel`` port over OpenAI Chat Completions, with strict structured output.

The SDK's own retries are off (``max_retries=0``): ``colony.llm.StructuredRunner`` retries
``ProviderUnavailable`` with its own back-off, so one ``request`` is exactly one HTTP call.
Exception messages carry error types, status codes and OpenAI's error codes, never prompt text;
the provider's own reason goes in ``ProviderError.reason``, with prompt text cut out. The
client's timeout is ``colony.deadline.DEFAULT_CALL_SECONDS`` and each call's is what the runner
gives it. The schema is ``colony.adapters.openai_schema``'s; where the address is not OpenAI's
own API the dialect is a compatible server's (``_options``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from colony.adapters.client import OwnsClient
from colony.adapters.openai_schema import schema_name, strict_json_schema
from colony.adapters.openai_stream import StreamedCompletion, openai_usage, tool_arguments
from colony.adapters.provider_reason import prompt_text, reason, says_invalid
from colony.adapters.retry_after import retry_after_seconds
from colony.adapters.tool_turns import paired
from colony.deadline import DEFAULT_CALL_SECONDS
from colony.errors import (
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
)
from colony.ports import Message, ModelRequest, ModelResponse, TextSink, ToolCall


def _openai_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    tool_turns = paired(messages)
    for i, message in enumerate(messages):
        if i in tool_turns and message.role == "assistant":
            calls = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ]
            out.append(
                {"role": "assistant", "content": message.content or None, "tool_calls": calls}
            )
        elif i in tool_turns:  # a tool result answering the call just before it
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        elif message.role == "tool":
            # No call right before it to answer (a paused call's later result): user text,
            # still inside its data block.
            out.append({"role": "user", "content": f"Tool result:\n{message.content}"})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def _openai_tools(tools: tuple[Mapping[str, Any], ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        function["parameters"] = dict(
            tool.get("parameters") or {"type": "object", "properties": {}}
        )
        out.append({"type": "function", "function": function})
    return out


def map_openai_error(error: Exception, request: ModelRequest) -> ProviderError:
    """The SDK's exception tree, re-expressed as ours: the type, the status, OpenAI's error
    code, and the body's own reason (``adapters.provider_reason``: bounded, no prompt text).

    A 5xx is retried, unless its reason says the request itself is invalid: a server that
    refuses a parameter with a 500 refuses it again however often it is asked."""
    # lazy: openai SDK, only to classify an error it raised (so it is loaded)
    import openai

    name = type(error).__name__
    if isinstance(error, openai.APITimeoutError):
        return ProviderTimeout(f"OpenAI chat completion failed: {name}")
    if isinstance(error, openai.APIConnectionError):
        return ProviderUnavailable(f"OpenAI chat completion failed: {name}")
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = f"OpenAI chat completion failed: {name} (HTTP {status}"
        detail += f", code {error.code})" if error.code else ")"
        said = reason(error.body, prompt_text(request))
        invalid = status >= 500 and says_invalid(said)
        if invalid:
            detail += ": the body says the request is invalid; not retried"
        elif isinstance(error, openai.RateLimitError) or status == 408 or status >= 500:
            wait = retry_after_seconds(error.response.headers)
            kind = ProviderRateLimited if status == 429 else ProviderUnavailable
            return kind(detail, retry_after=wait, reason=said)
        return ProviderError(detail, reason=said)
    return ProviderError(f"OpenAI chat completion failed: {name}")


class OpenAIChatModel(OwnsClient):
    """``ChatModel`` over ``client.chat.completions.create`` with a strict JSON schema."""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        timeout: float = DEFAULT_CALL_SECONDS,
        client: Any = None,
        *,
        compatible: bool | None = None,
    ) -> None:
        # OpenAI's own API, or another server that speaks its protocol (None: decided by the
        # address); see ``_options`` for what changes
        self.compatible = not is_openai(base_url) if compatible is None else compatible
        owns_client = client is None
        if client is None:
            # lazy: openai SDK, loaded when the client is first built
            import openai

            client = openai.OpenAI(
                api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
            )
        self._client = client
        self._owns_client = owns_client

    def request(self, request: ModelRequest) -> ModelResponse:
        try:
            response = self._client.chat.completions.create(**_options(request, self.compatible))
        except Exception as error:  # the SDK's own error tree; re-raised as ours
            raise map_openai_error(error, request) from error
        return _model_response(response, request.model)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """``create(stream=True)``: content deltas go to ``on_text`` as they arrive; tool
        calls are assembled from their deltas by index (the id and name come first, the
        arguments in pieces); usage comes in the last chunk (``include_usage``)."""
        options = {
            **_options(request, self.compatible),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        assembled = StreamedCompletion(request.model)
        try:
            chunks = self._client.chat.completions.create(**options)
            try:
                for chunk in chunks:
                    assembled.add(chunk, on_text)
            finally:
                chunks.close()
        except Exception as error:  # the SDK's own error tree; re-raised as ours
            if error is assembled.sink_error:  # ``on_text``'s own failure, not the provider's
                raise
            raise map_openai_error(error, request) from error
        return assembled.response()


def is_openai(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API (no address: the SDK's default, which is)."""
    return base_url is None or urlsplit(base_url).hostname == "api.openai.com"


def _options(request: ModelRequest, compatible: bool = False) -> dict[str, Any]:
    """The ``chat.completions.create`` arguments of one request.

    To a ``compatible`` server (not OpenAI's own API) the output cap also goes as
    ``max_tokens``, the only name most such servers know (without it, one runs to its context
    limit), and the schema keeps the strings' lengths, which a server that decodes by grammar
    (llama.cpp's) enforces. OpenAI itself is sent only ``max_completion_tokens``: its
    reasoning models refuse ``max_tokens``."""
    options: dict[str, Any] = {
        "model": request.model,
        "messages": _openai_messages(request.messages),
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": schema_name(request.output_name),
                "schema": strict_json_schema(request.output_schema, lengths=compatible),
                "strict": True,
            },
        },
        "max_completion_tokens": request.max_output_tokens,
        "temperature": request.temperature,
    }
    if compatible:
        options["max_tokens"] = request.max_output_tokens
    if request.tools:
        options["tools"] = _openai_tools(request.tools)
    if request.timeout_seconds is not None:  # what is left of the invocation's window
        options["timeout"] = request.timeout_seconds
    return options


def _model_response(response: Any, requested_model: str) -> ModelResponse:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ProviderError("OpenAI returned a chat completion without choices")
    choice = choices[0]
    message = choice.message
    usage = getattr(response, "usage", None)
    finish, refusal = _openai_finish(choice, message)
    tool_calls: list[ToolCall] = []
    for call in getattr(message, "tool_calls", None) or []:
        if getattr(call, "type", "function") != "function":
            continue
        arguments = tool_arguments(call.function.name, call.function.arguments)
        tool_calls.append(ToolCall(name=call.function.name, arguments=arguments, id=call.id))
    return ModelResponse(
        text=message.content or "",
        usage=openai_usage(usage),
        model=getattr(response, "model", None) or requested_model,
        tool_calls=tuple(tool_calls),
        finish=finish,
        refusal=refusal,
    )


def _openai_finish(
    choice: Any, message: Any
) -> tuple[Literal["stop", "length", "refused"], str | None]:
    """Why the completion stopped. Strict structured outputs put a refusal in
    ``message.refusal`` (its text is the model's, so only the category is kept);
    ``content_filter`` is OpenAI's moderation stopping the answer; ``length`` is the cap."""
    if getattr(message, "refusal", None):
        return "refused", "refusal"
    reason = getattr(choice, "finish_reason", None)
    if reason == "content_filter":
        return "refused", "content_filter"
    if reason == "length":
        return "length", None
    return "stop", None
