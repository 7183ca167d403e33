"""The model ports: the chat model (one structured-output call, whole or streamed), the
embedder and the token counter, and the messages, requests and answers they exchange.

Adapters: ``colony.adapters`` (OpenAI, Gemini, offline); fakes: ``colony.testing``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of ``dim`` floats, one row per text, in order
    (``colony.vectors``: lists of float32-rounded floats)."""

    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class Counter(Protocol):
    """Counts tokens as the target model does (``colony.context.tokens``: tiktoken offline,
    Gemini's ``countTokens`` with a key); ``label`` names the tokenizer, and says so when the
    count is an estimate. The empty text is 0 tokens, any other at least 1; the same text
    always counts the same. A provider-backed counter raises ``ProviderError`` when it
    cannot count, never quoting the text."""

    @property
    def label(self) -> str: ...

    def count(self, text: str) -> int: ...


Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool the model asked to run, with its arguments."""

    name: str
    arguments: Mapping[str, Any]
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation.

    An ``assistant`` message may carry the ``tool_calls`` it made; a ``tool`` message is the
    result of the call ``tool_call_id`` (of tool ``name``). Adapters send both as their
    provider's tool turns, so a tool result never reaches a model as the person speaking.
    ``name`` also labels an assistant message that is our own rolling summary (``"summary"``).
    ``id`` is the stored row the message was read from (a chat turn's row id), recorded in the
    call's provenance and never sent to a provider.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One structured-output call.

    ``output_name`` names the contract (``colony.contracts.OUTPUT_CONTRACTS``) and
    ``output_schema`` is its JSON schema. Every provider, the offline one included, answers
    from ``messages`` alone: there is no side channel for the inputs they were rendered from.
    ``metadata`` carries trace ids (org_id, run_id, agent_id, kc_domains_queried,
    context_budget_used) and ``untrusted_instructions`` (what the detector flagged in the
    untrusted input: labels and planted links, never the prompt).
    """

    model: str
    messages: tuple[Message, ...]
    output_name: str
    output_schema: Mapping[str, Any]
    tools: tuple[Mapping[str, Any], ...] = ()
    max_output_tokens: int = 1024
    # Gemini 2.5's thinking tokens, set explicitly (they are spent from their own budget,
    # added to the output cap by the adapter); other providers ignore it
    thinking_budget: int = 0
    temperature: float = 0.0
    timeout_seconds: float | None = None  # this call's own (None: the client's default)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    """What the provider counted for one call: ``tokens_in`` is the whole prompt, of which
    ``tokens_cached`` were served by its prompt cache (OpenAI's
    ``prompt_tokens_details.cached_tokens``, Gemini's ``cachedContentTokenCount``, both part
    of the prompt count) and billed at the cached rate (``colony.registry.prices``);
    ``tokens_out`` includes thinking tokens."""

    tokens_in: int
    tokens_out: int
    tokens_cached: int = 0


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The raw answer: JSON text for the contract (or tool calls) and real token usage.

    ``finish`` is why the model stopped: ``stop`` (a whole answer, or tool calls),
    ``length`` (cut at ``max_output_tokens``: the text is a fragment), ``refused`` (a refusal
    or a safety block: ``refusal`` names the provider's reason category, never the text)."""

    text: str
    usage: Usage
    model: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish: Literal["stop", "length", "refused"] = "stop"
    refusal: str | None = None


# Receives the answer's text as the provider streams it: each fragment once, in order.
TextSink = Callable[[str], None]


@runtime_checkable
class ChatModel(Protocol):
    """The LLM port. Adapters raise ``ProviderUnavailable`` for 429/5xx/timeouts (the runner
    retries those) and ``ProviderError`` for anything else; they do not retry themselves and
    do not validate the answer (the runner does).

    ``request`` is one call answered whole. ``stream`` is the same call over the provider's
    streaming API: it hands ``on_text`` each fragment of the answer text as it arrives (the
    fragments joined are ``ModelResponse.text``; the answer's raw text, JSON for a contract)
    and returns the whole ``ModelResponse`` at the end, tool calls assembled from their
    streamed pieces, usage and finish as ``request`` reports them. Only the chat streams;
    every other agent calls ``request``."""

    def request(self, request: ModelRequest) -> ModelResponse: ...

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse: ...
