"""Observability at the edges: LLM call tracing (Langfuse + ``llm_calls``), Sentry, Cloud
Logging's structured lines (``logs``) and the flush of both before an invocation returns
(``telemetry``).

Tracing and Sentry are no-ops without keys: ``tracer_from_settings`` gives ``NoopTracer`` and
``init_sentry`` does nothing, and neither imports its vendor SDK then.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.observability.logs import configure_logging
    from colony.observability.sentry import (
        error_scope,
        init_sentry,
        report,
        scrub,
        scrub_breadcrumb,
        shutdown_sentry,
    )
    from colony.observability.telemetry import flush_telemetry, register_flush, unregister_flush
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
    "configure_logging": "colony.observability.logs",
    "flush_telemetry": "colony.observability.telemetry",
    "register_flush": "colony.observability.telemetry",
    "unregister_flush": "colony.observability.telemetry",
    "error_scope": "colony.observability.sentry",
    "init_sentry": "colony.observability.sentry",
    "report": "colony.observability.sentry",
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
    "configure_logging",
    "error_scope",
    "error_summary",
    "flush_telemetry",
    "init_sentry",
    "register_flush",
    "report",
    "scrub",
    "scrub_breadcrumb",
    "shutdown_sentry",
    "tracer_from_settings",
    "unregister_flush",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'colony.observability' has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
