"""Observability at the edges: LLM call tracing (Langfuse + ``llm_calls``) and Sentry.

Both are no-ops without keys: ``tracer_from_settings`` gives ``NoopTracer`` and
``init_sentry`` does nothing, and neither imports its vendor SDK then.
"""

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
