"""Tracing at the ChatModel port: what one LLM call records, the ``Tracer`` that opens a
``Generation`` per call, and the ``TraceArchive`` erasure deletes an org's traces from.

``colony.observability.tracing``'s ``TracedChatModel`` wraps any ChatModel with a Tracer;
``NoopTracer`` is the default, ``LangfuseTracer`` the real one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol, runtime_checkable

from colony.errors import ValidationFailed
from colony.ports.models import ModelRequest, ModelResponse


@dataclass(frozen=True, slots=True)
class LlmCallRecord:
    """The metadata of one LLM call, as sent to Langfuse and kept in ``llm_calls``."""

    org_id: str
    agent_id: str
    run_id: str | None
    model: str
    kc_domains_queried: tuple[str, ...]
    tokens_in: int
    tokens_out: int
    context_budget_used: Mapping[str, int] = field(default_factory=dict)
    latency_ms: float | None = None
    untrusted_instructions: tuple[str, ...] = ()
    call_id: str | None = None  # one per assembled call; its repair and retries share it
    provenance: Mapping[str, Any] = field(default_factory=dict)  # kept in llm_calls only
    tokens_cached: int = 0  # of ``tokens_in``, what the provider's prompt cache served
    # USD, priced by ``CallRecorder`` from the price table (``colony.registry.prices``) as
    # the record is kept; None until then, and for a model the table does not name
    cost_usd: Decimal | None = None

    def metadata(self) -> dict[str, Any]:
        """The mandatory trace metadata (JSON-ready)."""
        return {
            "call_id": self.call_id,
            "org_id": self.org_id,
            "agent_id": self.agent_id,
            "run_id": self.run_id,
            "model": self.model,
            "kc_domains_queried": list(self.kc_domains_queried),
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_cached": self.tokens_cached,
            "context_budget_used": dict(self.context_budget_used),
            "latency_ms": self.latency_ms,
            "untrusted_instructions": list(self.untrusted_instructions),
        }


@dataclass(frozen=True, slots=True)
class CallContext:
    """The trace ids a request carries in ``ModelRequest.metadata``, validated."""

    org_id: str
    agent_id: str
    run_id: str | None
    kc_domains_queried: tuple[str, ...]
    context_budget_used: Mapping[str, int]
    untrusted_instructions: tuple[str, ...] = ()
    call_id: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, request: ModelRequest) -> CallContext:
        meta = request.metadata
        org_id, agent_id, run_id = meta.get("org_id"), meta.get("agent_id"), meta.get("run_id")
        for name, value in (("org_id", org_id), ("agent_id", agent_id)):
            if not isinstance(value, str) or not value.strip():
                raise ValidationFailed(f"ModelRequest.metadata.{name} must be a non-empty string")
        if run_id is not None and not isinstance(run_id, str):
            raise ValidationFailed("ModelRequest.metadata.run_id must be a string or absent")
        domains = meta.get("kc_domains_queried") or ()
        if isinstance(domains, str) or not isinstance(domains, Sequence):
            raise ValidationFailed("ModelRequest.metadata.kc_domains_queried must be a list")
        if not all(isinstance(d, str) for d in domains):
            raise ValidationFailed("ModelRequest.metadata.kc_domains_queried must hold strings")
        budget = meta.get("context_budget_used") or {}
        if not isinstance(budget, Mapping) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            for k, v in budget.items()
        ):
            raise ValidationFailed(
                "ModelRequest.metadata.context_budget_used must map section names to tokens"
            )
        flags = meta.get("untrusted_instructions") or ()
        if (
            isinstance(flags, str)
            or not isinstance(flags, Sequence)
            or not all(isinstance(f, str) for f in flags)
        ):
            raise ValidationFailed(
                "ModelRequest.metadata.untrusted_instructions must be a list of strings"
            )
        call_id, provenance = meta.get("call_id"), meta.get("provenance") or {}
        if call_id is not None and (not isinstance(call_id, str) or not call_id.strip()):
            raise ValidationFailed("ModelRequest.metadata.call_id must be a non-empty string")
        if not isinstance(provenance, Mapping):
            raise ValidationFailed("ModelRequest.metadata.provenance must be an object")
        assert isinstance(org_id, str) and isinstance(agent_id, str)  # checked above
        return cls(
            org_id,
            agent_id,
            run_id,
            tuple(domains),
            dict(budget),
            tuple(flags),
            call_id,
            dict(provenance),
        )

    def metadata(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "org_id": self.org_id,
            "agent_id": self.agent_id,
            "run_id": self.run_id,
            "kc_domains_queried": list(self.kc_domains_queried),
            "context_budget_used": dict(self.context_budget_used),
            "untrusted_instructions": list(self.untrusted_instructions),
        }

    def record(
        self, response: ModelResponse, request: ModelRequest, latency_ms: float
    ) -> LlmCallRecord:
        usage = response.usage
        model = response.model or request.model
        return self._record(
            model, usage.tokens_in, usage.tokens_out, latency_ms, usage.tokens_cached
        )

    def timed_out(self, request: ModelRequest, latency_ms: float) -> LlmCallRecord:
        """The record of a call that outlasted its timeout: no answer, so no usage from the
        provider, but the prompt was sent; ``tokens_in`` is what the assembler counted of it
        (``context_budget_used``; a repair's two extra turns are not in that count),
        ``tokens_out`` 0."""
        tokens_in = sum(self.context_budget_used.values())
        return self._record(request.model, tokens_in, 0, latency_ms)

    def _record(
        self, model: str, tokens_in: int, tokens_out: int, latency_ms: float, cached: int = 0
    ) -> LlmCallRecord:
        return LlmCallRecord(
            org_id=self.org_id,
            agent_id=self.agent_id,
            run_id=self.run_id,
            model=model,
            kc_domains_queried=self.kc_domains_queried,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            context_budget_used=self.context_budget_used,
            latency_ms=latency_ms,
            untrusted_instructions=self.untrusted_instructions,
            call_id=self.call_id,
            provenance=self.provenance,
            tokens_cached=cached,
        )


@runtime_checkable
class Generation(Protocol):
    """One traced LLM call, open while the inner model runs."""

    def succeed(self, record: LlmCallRecord, response: ModelResponse) -> None: ...

    def fail(self, status_message: str) -> None: ...


@runtime_checkable
class Tracer(Protocol):
    """Opens a ``Generation`` per call.

    Contract: an exception raised inside ``generation(...)`` leaves it unchanged (same
    object), and the tracer records nothing of it beyond what ``Generation.fail`` was told.
    """

    def generation(
        self, request: ModelRequest, context: CallContext
    ) -> AbstractContextManager[Generation]: ...

    def annotate(self, call_id: str, metadata: Mapping[str, int | str]) -> None:
        """Add what was learnt after a call ended (a count of quotes dropped, say: ids and
        numbers, never text) to the trace of its generation, found by ``call_id``; nothing
        when no generation of it is known."""
        ...

    def flush(self) -> None: ...

    def shutdown(self) -> None: ...


@runtime_checkable
class TraceArchive(Protocol):
    """Where LLM traces are kept (Langfuse), as erasure sees it. Every trace of an org carries
    the tag ``org_tag(org_id)`` (``colony.observability.tracing``)."""

    def trace_ids(self, tag: str) -> list[str]:
        """The ids of every trace carrying ``tag`` (all pages)."""
        ...

    def delete(self, trace_ids: Sequence[str]) -> None:
        """Ask for these traces to be deleted (ids already gone are not an error)."""
        ...


def org_tag(org_id: str) -> str:
    """The tag every trace of ``org_id`` carries, by which erasure finds them."""
    return f"org:{org_id}"
