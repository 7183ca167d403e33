"""Observability at the edges: LLM call tracing (``tracing``: Langfuse + ``llm_calls``),
errors to Sentry (``sentry``), Cloud Logging's structured lines (``logs``) and the flush of
queued telemetry before an invocation returns (``telemetry``).

Import the submodule you need: importing this package loads none of them, so a function that
only logs never reaches the Langfuse SDK (bundles are computed from the import graph). Tracing
and Sentry are no-ops without keys, and neither imports its vendor SDK then.
"""
