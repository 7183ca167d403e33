"""Observability at the edges: LLM call tracing (Langfuse + ``llm_calls``) and Sentry.

Both are no-ops without keys: ``tracer_from_settings`` gives ``NoopTracer`` and
``init_sentry`` does nothing, and neither imports its vendor SDK then.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.observability.sentry import (
        error_scope,
        init_sentry,
        scrub,
        scrub_breadcrumb,
        shutdown_sentry,
    )
    from colony.observability.tracing import (
        INSERT_LLM_CALL,
        CallContext,
        CallRecorder,
        Generation,
        LangfuseTracer,
        LlmCallRecord,
        NoopTracer,
        TracedChatModel,
        Tracer,
        error_summary,
        tracer_from_settings,
    )

# Loaded on first use (PEP 562) so that importing one of them does not load the other.
_HOMES = {
    "error_scope": "colony.observability.sentry",
    "init_sentry": "colony.observability.sentry",
    "scrub": "colony.observability.sentry",
    "scrub_breadcrumb": "colony.observability.sentry",
    "shutdown_sentry": "colony.observability.sentry",
    "INSERT_LLM_CALL": "colony.observability.tracing",
    "CallContext": "colony.observability.tracing",
    "CallRecorder": "colony.observability.tracing",
    "Generation": "colony.observability.tracing",
    "LangfuseTracer": "colony.observability.tracing",
    "LlmCallRecord": "colony.observability.tracing",
    "NoopTracer": "colony.observability.tracing",
    "TracedChatModel": "colony.observability.tracing",
    "Tracer": "colony.observability.tracing",
    "error_summary": "colony.observability.tracing",
    "tracer_from_settings": "colony.observability.tracing",
}

__all__ = [
    "INSERT_LLM_CALL",
    "CallContext",
    "CallRecorder",
    "Generation",
    "LangfuseTracer",
    "LlmCallRecord",
    "NoopTracer",
    "TracedChatModel",
    "Tracer",
    "error_scope",
    "error_summary",
    "init_sentry",
    "scrub",
    "scrub_breadcrumb",
    "shutdown_sentry",
    "tracer_from_settings",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'colony.observability' has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
