"""The ``ChatModel`` port over Gemini ``generateContent`` (``google-genai``), JSON-schema output.

The schema goes out as ``generationConfig.responseJsonSchema`` (``response_json_schema``:
the SDK passes it through unchanged) rather than ``responseSchema``, whose OpenAPI subset
cannot express ``$defs``/``$ref`` the way pydantic writes them. ``google-genai`` never
retries unless given ``HttpRetryOptions``, and none are given: ``colony.llm.StructuredRunner``
retries ``ProviderUnavailable``. Exception messages carry types and status codes only.
"""

from __future__ import annotations

import copy
import importlib
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from colony.adapters.client import OwnsClient
from colony.adapters.provider_reason import prompt_text, reason, says_invalid
from colony.adapters.retry_after import retry_after_seconds
from colony.adapters.schema_words import describe
from colony.adapters.tool_turns import paired
from colony.deadline import DEFAULT_CALL_SECONDS
from colony.errors import (
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    ToolCallInvalid,
    ValidationFailed,
)
from colony.ports import Message, ModelRequest, ModelResponse, TextSink, ToolCall, Usage

# What ``responseJsonSchema`` supports (google-genai's GenerationConfig docs); anything else
# (default, minLength, maxLength, pattern, exclusiveMinimum, ...) is dropped, each limit among
# them said in the node's description (``colony.adapters.schema_words``), which the model reads.
GEMINI_SCHEMA_KEYWORDS = frozenset(
    {
        "$id",
        "$defs",
        "$ref",
        "$anchor",
        "type",
        "format",
        "description",
        "enum",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "anyOf",
        "properties",
        "additionalProperties",
        "required",
        "propertyOrdering",
    }
)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def gemini_json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a pydantic JSON schema restricted to what ``responseJsonSchema`` supports.

    ``const`` becomes a one-value ``enum``, ``oneOf`` becomes ``anyOf``, a ``$ref`` keeps
    only its ``$``-siblings (Gemini allows no others) and ``required`` is left as it is
    (Gemini, unlike OpenAI strict mode, lets optional properties be omitted). A limit outside
    ``GEMINI_SCHEMA_KEYWORDS`` is said in the node's description.
    """
    return _gemini_node(copy.deepcopy(dict(schema)))


def _gemini_node(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return {k: v for k, v in node.items() if k.startswith("$") and k != "$defs"}
    if "oneOf" in node and "anyOf" not in node:
        node["anyOf"] = node.pop("oneOf")
    if "const" in node and "enum" not in node:
        node["enum"] = [node["const"]]
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in GEMINI_SCHEMA_KEYWORDS:
            continue
        if key in ("$defs", "properties"):
            out[key] = {name: _gemini_node(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _gemini_node(value)
        elif key in ("anyOf", "prefixItems"):
            out[key] = [_gemini_node(sub) for sub in value]
        elif key != "description":  # rebuilt below
            out[key] = value
    description = describe(node, GEMINI_SCHEMA_KEYWORDS)
    if description:
        out["description"] = description
    return out


def _httpx_errors(*names: str) -> tuple[type[BaseException], ...]:
    """These exception classes of whichever httpx the SDK runs on (httpx2 or httpx)."""
    found: list[type[BaseException]] = []
    for module_name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found += [getattr(module, name) for name in names]
    return tuple(found)


def _retry_delay_from_details(details: Any) -> float | None:
    """``google.rpc.RetryInfo.retryDelay`` (e.g. ``"13s"``) from an error body, if any."""
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details") or ():
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            found = _DURATION.match(str(item.get("retryDelay", "")))
            if found:
                return float(found.group(1))
    return None


def map_gemini_error(error: Exception, request: ModelRequest) -> ProviderError:
    """``google.genai.errors.APIError`` and transport failures, re-expressed as ours, with the
    body's own reason (bounded, no prompt text); a 5xx whose reason says the request is invalid
    is not retried (as ``colony.adapters.openai_chat.map_openai_error``)."""
    # lazy: google-genai SDK, only to classify an error it raised (so it is loaded)
    from google.genai import errors

    name = type(error).__name__
    if isinstance(error, errors.APIError):
        code = int(error.code or 0)
        detail = f"Gemini generate_content failed: {name} (HTTP {code}"
        detail += f", {error.status})" if error.status else ")"
        body = {"status": error.status, "message": error.message}
        said = reason(body, prompt_text(request))
        if code >= 500 and says_invalid(said):
            return ProviderError(detail + ": the body says the request is invalid", reason=said)
        if code in (408, 429) or code >= 500:
            retry_after = retry_after_seconds(getattr(error.response, "headers", None))
            if retry_after is None:
                retry_after = _retry_delay_from_details(error.details)
            kind = ProviderRateLimited if code == 429 else ProviderUnavailable
            return kind(detail, retry_after=retry_after, reason=said)
        return ProviderError(detail, reason=said)
    if isinstance(error, _httpx_errors("TimeoutException")):
        return ProviderTimeout(f"Gemini generate_content failed: {name}")
    if isinstance(error, _httpx_errors("NetworkError", "RemoteProtocolError")):
        return ProviderUnavailable(f"Gemini generate_content failed: {name}")
    return ProviderError(f"Gemini generate_content failed: {name}")


class GeminiChatModel(OwnsClient):
    """``ChatModel`` over ``client.models.generate_content`` with ``response_json_schema``."""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        client: Any = None,
        *,
        timeout: float = DEFAULT_CALL_SECONDS,
        api_version: str | None = None,
    ) -> None:
        owns_client = client is None
        if client is None:
            # lazy: google-genai SDK, loaded on first use
            from google import genai
            from google.genai import types

            # No retry_options: google-genai then makes exactly one attempt per call.
            http_options = types.HttpOptions(
                base_url=base_url, api_version=api_version, timeout=int(timeout * 1000)
            )
            client = genai.Client(api_key=api_key, http_options=http_options)
        self._client = client
        self._owns_client = owns_client

    def request(self, request: ModelRequest) -> ModelResponse:
        contents, config = _call(request)
        try:
            response = self._client.models.generate_content(
                model=request.model, contents=contents, config=config
            )
        except Exception as error:  # the SDK's own error tree; re-raised as ours
            raise map_gemini_error(error, request) from error
        return _model_response(response, request.model)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """``generate_content_stream`` (``:streamGenerateContent?alt=sse``): each chunk's
        text parts go to ``on_text`` as they arrive (thoughts are not the answer); function
        calls come whole, each in its own part; the finish reason and the usage are the last
        chunk's (Gemini's usage counts are running totals)."""
        contents, config = _call(request)
        texts: list[str] = []
        calls: list[ToolCall] = []
        final: Any = None  # the last chunk with a candidate (its finish reason)
        usage: Any = None  # the last usage totals
        sink_error: BaseException | None = None
        try:
            for chunk in self._client.models.generate_content_stream(
                model=request.model, contents=contents, config=config
            ):
                if final is None or getattr(chunk, "candidates", None):
                    final = chunk
                if getattr(chunk, "usage_metadata", None) is not None:
                    usage = chunk.usage_metadata
                piece, found = _parts(chunk)
                calls += found
                if piece:
                    texts.append(piece)
                    try:
                        on_text(piece)
                    except BaseException as error:
                        sink_error = error
                        raise
        except Exception as error:  # the SDK's own error tree; re-raised as ours
            if error is sink_error:  # ``on_text``'s own failure, not the provider's
                raise
            raise map_gemini_error(error, request) from error
        if final is None or not _finished(final):  # the connection ended before the answer
            raise ProviderUnavailable("Gemini's generate_content stream ended before its finish")
        if usage is not None and final.usage_metadata is not usage:
            final = final.model_copy(update={"usage_metadata": usage})
        whole = _model_response(final, request.model)
        return replace(whole, text="".join(texts), tool_calls=tuple(calls))


def _finished(chunk: Any) -> bool:
    """Whether a chunk ends the answer: a finish reason, or a blocked prompt."""
    candidates = getattr(chunk, "candidates", None) or []
    if candidates:
        return bool(_enum_name(getattr(candidates[0], "finish_reason", None)))
    return getattr(getattr(chunk, "prompt_feedback", None), "block_reason", None) is not None


def _call(request: ModelRequest) -> tuple[list[Any], Any]:
    """The contents and config of one ``generate_content`` request."""
    # lazy: google-genai SDK, loaded on first use
    from google.genai import types

    system = "\n\n".join(m.content for m in request.messages if m.role == "system")
    contents = _gemini_contents(request.messages)
    if not contents:
        raise ValidationFailed("a Gemini request needs at least one user or assistant message")
    config = types.GenerateContentConfig(
        system_instruction=system or None,
        response_mime_type="application/json",
        response_json_schema=gemini_json_schema(request.output_schema),
        # Gemini 2.5 spends its thoughts from maxOutputTokens: the answer's cap plus an
        # explicit thinking budget, so thinking cannot eat the answer
        max_output_tokens=request.max_output_tokens + request.thinking_budget,
        thinking_config=types.ThinkingConfig(thinking_budget=request.thinking_budget),
        temperature=request.temperature,
        tools=_gemini_tools(request.tools) if request.tools else None,
        # what is left of the invocation's window (None: the client's own timeout)
        http_options=types.HttpOptions(timeout=int(request.timeout_seconds * 1000))
        if request.timeout_seconds is not None
        else None,
    )
    return contents, config


def _gemini_contents(messages: tuple[Message, ...]) -> list[Any]:
    # lazy: google-genai SDK, loaded on first use
    from google.genai import types

    contents: list[Any] = []
    tool_turns = paired(messages)
    names: dict[str, str] = {}
    for i, message in enumerate(messages):
        if message.role == "system":
            continue
        if i in tool_turns and message.role == "assistant":
            parts = [types.Part(text=message.content)] if message.content else []
            for call in message.tool_calls:
                names[str(call.id)] = call.name
                parts.append(
                    types.Part(
                        function_call=types.FunctionCall(
                            id=call.id, name=call.name, args=dict(call.arguments)
                        )
                    )
                )
            contents.append(types.Content(role="model", parts=parts))
        elif i in tool_turns:  # the answer to the call just before it
            response = types.FunctionResponse(
                id=message.tool_call_id,
                name=message.name or names.get(str(message.tool_call_id), "tool"),
                response={"result": message.content},
            )
            contents.append(
                types.Content(role="user", parts=[types.Part(function_response=response)])
            )
        else:
            role = "model" if message.role == "assistant" else "user"
            text = message.content
            if message.role == "tool":  # no call right before it: user text, in its block
                text = f"Tool result:\n{text}"
            contents.append(types.Content(role=role, parts=[types.Part(text=text)]))
    return contents


def _gemini_tools(tools: tuple[Mapping[str, Any], ...]) -> list[Any]:
    # lazy: google-genai SDK, loaded on first use
    from google.genai import types

    declarations = [
        types.FunctionDeclaration(
            name=tool["name"],
            description=tool.get("description") or None,
            parameters_json_schema=dict(
                tool.get("parameters") or {"type": "object", "properties": {}}
            ),
        )
        for tool in tools
    ]
    return [types.Tool(function_declarations=declarations)]


def _model_response(response: Any, requested_model: str) -> ModelResponse:
    candidates = getattr(response, "candidates", None) or []
    usage = getattr(response, "usage_metadata", None)
    tokens_in = int(getattr(usage, "prompt_token_count", 0) or 0)
    # The part of the prompt Gemini's context cache served (counted in the prompt as well).
    cached = int(getattr(usage, "cached_content_token_count", 0) or 0)
    model = getattr(response, "model_version", None) or requested_model
    if not candidates:
        feedback = getattr(response, "prompt_feedback", None)
        reason = getattr(feedback, "block_reason", None)
        if reason:  # the prompt itself was blocked: a refusal, not a fault
            category = f"prompt:{_enum_name(reason)}"
            usage_in = Usage(tokens_in, 0, cached)
            return ModelResponse("", usage_in, model, finish="refused", refusal=category)
        raise ProviderError("Gemini returned no candidates")
    finish = _enum_name(getattr(candidates[0], "finish_reason", None))
    if finish == "MALFORMED_FUNCTION_CALL":  # the model's function call did not parse
        raise ToolCallInvalid("Gemini returned a function call it could not parse")
    text, tool_calls = _parts(response)
    # Thinking tokens are billed as output (as OpenAI's completion_tokens include reasoning).
    tokens_out = int(getattr(usage, "candidates_token_count", 0) or 0)
    tokens_out += int(getattr(usage, "thoughts_token_count", 0) or 0)
    stopped: Literal["stop", "length", "refused"] = "stop"
    if finish == "MAX_TOKENS":
        stopped = "length"
    elif finish in BLOCKED:
        stopped = "refused"
    return ModelResponse(
        text=text,
        usage=Usage(tokens_in=tokens_in, tokens_out=tokens_out, tokens_cached=cached),
        model=model,
        tool_calls=tuple(tool_calls),
        finish=stopped,
        refusal=finish if stopped == "refused" else None,
    )


def _parts(response: Any) -> tuple[str, list[ToolCall]]:
    """The first candidate's answer text (thoughts left out) and function calls."""
    candidates = getattr(response, "candidates", None) or []
    content = getattr(candidates[0], "content", None) if candidates else None
    texts: list[str] = []
    tool_calls: list[ToolCall] = []
    for part in getattr(content, "parts", None) or []:
        call = getattr(part, "function_call", None)
        if call is not None:
            tool_calls.append(
                ToolCall(name=call.name or "", arguments=dict(call.args or {}), id=call.id)
            )
        elif getattr(part, "text", None) and not getattr(part, "thought", False):
            texts.append(part.text)
    return "".join(texts), tool_calls


# Gemini's finish reasons that mean the answer was withheld (a safety or policy block)
BLOCKED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)


def _enum_name(value: Any) -> str:
    """An SDK enum's name (``FinishReason.MAX_TOKENS`` → ``MAX_TOKENS``); '' for None."""
    if value is None:
        return ""
    return str(getattr(value, "value", value))
