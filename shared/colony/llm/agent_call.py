"""The one path every agent's LLM call takes: assemble → traced model → validated contract.

``LlmDeps`` is built once per function instance (the composition root); ``call_agent`` is what
flows call. Every provider sees only the assembled messages, the offline one included: what
a model needs must be in the prompt.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from colony.context.assembler import AssembledContext, AssemblyRequest, assemble
from colony.context.budgets import BudgetBook, load_budgets
from colony.context.tokens import GeminiTokenCounter, counter_for
from colony.contracts import OUTPUT_CONTRACTS
from colony.errors import ToolCallInvalid
from colony.llm.limited import LimitedChatModel
from colony.llm.runner import AnswerStream, StructuredRunner
from colony.observability import categories
from colony.observability.call_records import CallRecorder
from colony.observability.tracing import NoopTracer, TracedChatModel, tracer_from_settings
from colony.ports import ChatModel, Counter, ModelRequest, ToolCall, Tracer, Usage
from colony.registry.limits import load_limits
from colony.registry.prices import load_prices
from colony.runtime.limiter import Limiter
from colony.settings import Settings
from colony.store import Database


@dataclass(frozen=True)
class LlmDeps:
    """The model side of a flow's dependencies: the traced chat model, its budgets, the
    structured runner and the target model's tokenizer."""

    chat: ChatModel  # already wrapped by tracing (and by the limiter, where limits are set)
    model: str  # the default model; a profile may name its own (budgets.json "calls")
    budgets: BudgetBook
    runner: StructuredRunner
    counter: Counter  # the target model's tokenizer (or a labelled estimate)
    provider: str = "offline"
    pinned: bool = False  # COLONY_LLM_MODEL set: every profile uses ``model``
    tracer: Tracer = field(default_factory=NoopTracer)  # the one ``chat`` traces with

    def annotate(self, call_id: str, **metadata: int | str) -> None:
        """Add what a flow learnt after the call (``quotes_dropped``) to the call's trace."""
        if call_id:
            self.tracer.annotate(call_id, metadata)

    def model_for(self, profile: str) -> str:
        if self.pinned:
            return self.model
        return self.budgets.model_for_profile(self.provider, profile)


@dataclass(frozen=True)
class AgentResult:
    """One agent call's outcome: the assembled context, the validated output (or tool calls),
    usage, the model and how many attempts it took."""

    assembled: AssembledContext
    output: BaseModel | None
    usage: Usage
    model: str
    attempts: int
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str = field(default="")  # the llm_calls rows of this call (``colony explain``)


def trace_metadata(request: AssemblyRequest, assembled: AssembledContext) -> dict[str, Any]:
    """The trace metadata of one assembled call, with a fresh ``call_id``: the outputs the
    call produces keep it, so ``colony explain`` finds what their context was built from."""
    return {
        "call_id": uuid.uuid4().hex,
        "org_id": request.org_id,
        "run_id": request.run_id,
        "agent_id": assembled.bundle.agent_role,
        "kc_domains_queried": list(assembled.kc_domains),
        "context_budget_used": dict(assembled.account),
        "untrusted_instructions": list(assembled.untrusted_instructions),
        "provenance": assembled.provenance,
    }


def call_agent(
    deps: LlmDeps,
    request: AssemblyRequest,
    *,
    check: Callable[[Any], Sequence[str]] | None = None,
    stream: AnswerStream | None = None,
) -> AgentResult:
    """Assemble the context for ``request`` and run it to a validated output contract, with
    the profile's model, output cap and thinking budget (``BudgetBook.call_for``); with
    ``stream``, over the provider's streaming API, the answer's text fed to it as it comes
    (the chat's turn; every other agent is answered whole).

    A context that cannot be assembled and a provider's tool call that cannot be parsed are
    reported to Sentry as their categories (``colony.observability.categories``), then
    raised as they are."""
    try:
        assembled = assemble(request, budgets=deps.budgets, counter=deps.counter)
    except Exception as error:
        agent_id = request.profile.split("/")[0]  # a pass ("AGT-006/pass1") is its agent's
        categories.report(
            "context_assembly",
            error,
            org_id=request.org_id,
            run_id=request.run_id,
            agent_id=agent_id,
        )
        raise
    contract = OUTPUT_CONTRACTS[assembled.output_name]
    limits = deps.budgets.call_for(request.profile)
    model_request = ModelRequest(
        model=deps.model_for(request.profile),
        messages=assembled.messages,
        output_name=assembled.output_name,
        output_schema=contract.model_json_schema(),
        tools=tuple(t.model_dump() for t in request.tools),
        max_output_tokens=limits.output,
        thinking_budget=limits.thinking,
        metadata=trace_metadata(request, assembled),
    )
    try:
        result = deps.runner.run(model_request, contract, check=check, stream=stream)
    except ToolCallInvalid as error:
        categories.report(
            "tool_call_parse",
            error,
            org_id=request.org_id,
            run_id=request.run_id,
            agent_id=assembled.bundle.agent_role,
        )
        raise
    return AgentResult(
        assembled,
        result.output,
        result.usage,
        result.model,
        result.attempts,
        result.tool_calls,
        model_request.metadata["call_id"],
    )


def chat_model_from_settings(settings: Settings) -> ChatModel:
    """The configured provider's adapter (its module and SDK imported only for the one
    chosen: the offline provider's answer families are not loaded in production)."""
    if settings.llm_provider == "openai":
        # lazy: only the configured provider's adapter loads, with the first model client
        from colony.adapters.openai_chat import OpenAIChatModel

        key = settings.api_key("openai", "COLONY_LLM_PROVIDER")
        return OpenAIChatModel(api_key=key, base_url=settings.openai_base_url)
    if settings.llm_provider == "gemini":
        # lazy: only the configured provider's adapter loads, with the first model client
        from colony.adapters.gemini_chat import GeminiChatModel

        key = settings.api_key("gemini", "COLONY_LLM_PROVIDER")
        return GeminiChatModel(api_key=key, base_url=settings.gemini_base_url)
    # lazy: only the configured provider's adapter loads, with the first model client
    from colony.adapters.offline import OfflineChatModel

    return OfflineChatModel()


def llm_from_settings(settings: Settings, db: Database | None = None) -> LlmDeps:
    """Composition root for LLM calls: provider, tracing (no-op without keys), call records."""
    budgets = load_budgets(settings.budgets_file)
    model = settings.llm_model or budgets.model_for(settings.llm_provider)
    tracer = tracer_from_settings(settings)
    recorder = CallRecorder(db, load_prices(settings.prices_file)) if db is not None else None
    counter = counter_from_settings(settings, model)
    chat: ChatModel = TracedChatModel(chat_model_from_settings(settings), tracer, recorder)
    limits = load_limits(settings.limits_file)
    if db is not None and limits.models:  # the provider's limits, shared by every instance
        chat = LimitedChatModel(chat, Limiter(db), limits, counter)
    return LlmDeps(
        chat,
        model,
        budgets,
        StructuredRunner(chat),
        counter,
        provider=settings.llm_provider,
        pinned=settings.llm_model is not None,
        tracer=tracer,
    )


def counter_from_settings(settings: Settings, model: str) -> Counter:
    """Gemini's own countTokens when its key is configured, else the offline tokenizer."""
    if settings.llm_provider == "gemini" and settings.gemini_api_key:
        # lazy: google-genai SDK, only for Gemini's own countTokens
        from google import genai
        from google.genai import types

        options = (
            types.HttpOptions(base_url=settings.gemini_base_url)
            if settings.gemini_base_url
            else None
        )
        client = genai.Client(api_key=settings.gemini_api_key, http_options=options)
        return GeminiTokenCounter(client, model)
    return counter_for(model)
