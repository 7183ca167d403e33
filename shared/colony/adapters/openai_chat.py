"""The ``ChatModel`` port over OpenAI Chat Completions, with strict structured output.

The SDK's own retries are off (``max_retries=0``): ``colony.llm.StructuredRunner`` retries
``ProviderUnavailable`` with its own back-off, so one ``request`` is exactly one HTTP call.
Exception messages carry error types, status codes and OpenAI's error codes, never prompt text.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from colony.adapters.client import OwnsClient
from colony.adapters.openai_stream import StreamedCompletion, tool_arguments
from colony.adapters.retry_after import retry_after_seconds
from colony.adapters.tool_turns import paired
from colony.errors import ProviderError, ProviderUnavailable
from colony.ports import Message, ModelRequest, ModelResponse, TextSink, ToolCall, Usage

# What OpenAI's strict mode accepts in a schema node. Everything else (default, format,
# minLength, maxLength, title, examples, uniqueItems, ...) is dropped; the runner validates
# the answer against the full pydantic contract anyway.
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "$ref",
        "$defs",
        "description",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
_SCHEMA_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_NULL = {"type": "null"}


def strict_json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a pydantic JSON schema that OpenAI's ``strict: true`` accepts.

    * every object gets ``additionalProperties: false`` and lists every property in
      ``required``;
    * a property that was optional with a ``None`` default (or that already admits null)
      becomes required-and-nullable; one that was optional with a non-null default (a
      ``default_factory=list``, a ``Literal`` tag) becomes required without null, since
      null is not a valid value for it;
    * ``const`` becomes a one-value ``enum``, ``oneOf`` becomes ``anyOf``, a one-item
      ``allOf`` is inlined, ``$ref`` loses its siblings, ``$defs`` are kept (and converted);
    * keywords outside ``STRICT_KEYWORDS`` are dropped.

    The input is not modified.
    """
    return _strict_node(copy.deepcopy(dict(schema)))


def _strict_node(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if "$ref" in node:  # OpenAI allows no siblings next to a $ref
        return {"$ref": node["$ref"]}
    if "allOf" in node and len(node["allOf"]) == 1:
        merged = {k: v for k, v in node.items() if k != "allOf"}
        return _strict_node({**node["allOf"][0], **merged})
    if "oneOf" in node and "anyOf" not in node:
        node["anyOf"] = node.pop("oneOf")
    if "const" in node and "enum" not in node:
        node["enum"] = [node["const"]]

    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in STRICT_KEYWORDS:
            continue
        if key == "$defs":
            out[key] = {name: _strict_node(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = _strict_node(value)
        elif key == "anyOf":
            out[key] = [_strict_node(sub) for sub in value]
        elif key in ("properties", "required", "additionalProperties"):
            continue  # rebuilt below
        else:
            out[key] = value

    is_object = node.get("type") == "object" or "properties" in node
    if is_object:
        properties: dict[str, Any] = node.get("properties") or {}
        required = set(node.get("required") or ())
        converted: dict[str, Any] = {}
        for name, sub in properties.items():
            strict_sub = _strict_node(sub)
            if name not in required and _defaults_to_null(sub):
                strict_sub = _nullable(strict_sub)
            converted[name] = strict_sub
        out["type"] = "object"
        out["properties"] = converted
        out["required"] = list(converted)
        out["additionalProperties"] = False
    return out


def _defaults_to_null(schema: Any) -> bool:
    """Optional with a ``None`` default, or no default at all and null already allowed."""
    if not isinstance(schema, dict):
        return False
    if "default" in schema:
        return schema["default"] is None
    return _admits_null(schema)


def _admits_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(s, dict) and _admits_null(s) for s in schema.get("anyOf") or ())


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if _admits_null(schema):
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], dict(_NULL)]}
    kind = schema.get("type")
    if "$ref" in schema or kind is None:
        return {"anyOf": [schema, dict(_NULL)]}
    out = dict(schema)
    out["type"] = [*kind, "null"] if isinstance(kind, list) else [kind, "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def schema_name(output_name: str) -> str:
    """``json_schema.name`` must match ``^[a-zA-Z0-9_-]{1,64}$``."""
    return _SCHEMA_NAME_BAD_CHARS.sub("_", output_name)[:64] or "output"


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


def map_openai_error(error: Exception) -> ProviderError:
    """The SDK's exception tree, re-expressed as ours (type, status and error code only)."""
    # lazy: openai SDK, only to classify an error it raised (so it is loaded)
    import openai

    name = type(error).__name__
    if isinstance(error, openai.APITimeoutError | openai.APIConnectionError):
        return ProviderUnavailable(f"OpenAI chat completion failed: {name}")
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = f"OpenAI chat completion failed: {name} (HTTP {status}"
        detail += f", code {error.code})" if error.code else ")"
        if isinstance(error, openai.RateLimitError) or status == 408 or status >= 500:
            return ProviderUnavailable(
                detail, retry_after=retry_after_seconds(error.response.headers)
            )
        return ProviderError(detail)
    return ProviderError(f"OpenAI chat completion failed: {name}")


class OpenAIChatModel(OwnsClient):
    """``ChatModel`` over ``client.chat.completions.create`` with a strict JSON schema."""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 120.0,
        client: Any = None,
    ) -> None:
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
            response = self._client.chat.completions.create(**_options(request))
        except Exception as error:  # the SDK's own error tree; re-raised as ours
            raise map_openai_error(error) from error
        return _model_response(response, request.model)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """``create(stream=True)``: content deltas go to ``on_text`` as they arrive; tool
        calls are assembled from their deltas by index (the id and name come first, the
        arguments in pieces); usage comes in the last chunk (``include_usage``)."""
        options = {**_options(request), "stream": True, "stream_options": {"include_usage": True}}
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
            raise map_openai_error(error) from error
        return assembled.response()


def _options(request: ModelRequest) -> dict[str, Any]:
    """The ``chat.completions.create`` arguments of one request."""
    options: dict[str, Any] = {
        "model": request.model,
        "messages": _openai_messages(request.messages),
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": schema_name(request.output_name),
                "schema": strict_json_schema(request.output_schema),
                "strict": True,
            },
        },
        "max_completion_tokens": request.max_output_tokens,
        "temperature": request.temperature,
    }
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
        usage=Usage(
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
        ),
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
