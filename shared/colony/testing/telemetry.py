"""Telemetry stand-ins that only deliver when flushed, so a test can tell a flush happened.

``QueuedSentryTransport`` holds Sentry envelopes until the client flushes it, like the SDK's
HTTP transport whose background worker may not run once Cloud Functions throttles the CPU.
``batched_langfuse`` builds a ``LangfuseTracer`` whose spans wait in the SDK's own batching
span processor (in front of an in-memory exporter) until something flushes it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from colony.observability.sentry import init_sentry, shutdown_sentry
from colony.observability.tracing import LangfuseTracer
from colony.settings import Settings

NEVER_CONTACTED = "http://127.0.0.1:9"  # the discard port: Langfuse's host, never used


class QueuedSentryTransport(Transport):
    """Keeps envelopes in ``queued`` until ``flush`` moves them to ``sent``."""

    def __init__(self) -> None:
        super().__init__()
        self.queued: list[Envelope] = []
        self.sent: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        self.queued.append(envelope)

    def flush(self, timeout: float, callback: Callable[..., Any] | None = None) -> None:
        self.sent.extend(self.queued)
        self.queued.clear()

    def events(self) -> list[dict[str, Any]]:
        """The error events sent so far (not those still queued)."""
        return [
            item.payload.json
            for envelope in self.sent
            for item in envelope.items
            if item.type == "event" and item.payload.json is not None
        ]

    def serialized(self) -> bytes:
        """Every envelope, sent or queued, as the bytes that would go over the wire."""
        return b"".join(envelope.serialize() for envelope in (*self.sent, *self.queued))


@contextmanager
def queued_sentry() -> Iterator[QueuedSentryTransport]:
    """Sentry initialised with a ``QueuedSentryTransport``; shut down afterwards.

    Set ``SENTRY_RELEASE`` in the environment first, or the SDK runs git to find one."""
    transport = QueuedSentryTransport()
    settings = Settings.from_env({"SENTRY_DSN": "https://public@o1.ingest.invalid/1"})
    if not init_sentry(settings, transport=transport):
        raise AssertionError("Sentry did not initialise")
    try:
        yield transport
    finally:
        shutdown_sentry()


@dataclass
class BatchedLangfuse:
    tracer: LangfuseTracer
    exported: InMemorySpanExporter

    def spans(self) -> tuple[ReadableSpan, ...]:
        """The spans exported so far (without flushing anything)."""
        return self.exported.get_finished_spans()


@contextmanager
def batched_langfuse() -> Iterator[BatchedLangfuse]:
    """A ``LangfuseTracer`` on its own provider, exporting to memory through the SDK's batch
    processor. ``LANGFUSE_FLUSH_INTERVAL`` should be set high, so only a flush exports."""
    if float(os.environ.get("LANGFUSE_FLUSH_INTERVAL", "5")) < 60:
        raise AssertionError("set LANGFUSE_FLUSH_INTERVAL high, or the batch may leave early")
    exported = InMemorySpanExporter()
    tracer = LangfuseTracer(
        public_key=f"pk-lf-test-{uuid.uuid4().hex[:8]}",
        secret_key="sk-lf-test",
        host=NEVER_CONTACTED,
        span_exporter=exported,
    )
    try:
        yield BatchedLangfuse(tracer, exported)
    finally:
        tracer.shutdown()
