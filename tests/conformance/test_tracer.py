"""The ``Tracer`` port's conformance suite: the no-op default and Langfuse.

- ``noop``: ``colony.observability.tracing.NoopTracer``, what every function runs without
  Langfuse keys (and what flow tests get);
- ``langfuse``: ``LangfuseTracer`` with its real OpenTelemetry pipeline, exporting into
  in-memory exporters (the one part stood in: nothing may reach a Langfuse server from here;
  the host is a discard port that is never contacted).

The contract (``colony.ports.Tracer``): ``generation(request, context)`` is a context manager
yielding a ``Generation``; ``succeed`` and ``fail`` may be called on it; an exception raised
inside leaves the block unchanged (the same object, not wrapped); ``flush`` and ``shutdown``
return, and may be called more than once. What a tracer records is the adapter's own business
(``tests/test_observability.py`` checks Langfuse's spans); here both must behave alike for
the code that wraps the model (``TracedChatModel``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from colony.observability.tracing import LangfuseTracer, NoopTracer, TracedChatModel
from colony.ports import (
    CallContext,
    Generation,
    LlmCallRecord,
    Message,
    ModelRequest,
    ModelResponse,
    Tracer,
    Usage,
)

LOCAL_HOST = "http://127.0.0.1:9"  # discard port: never contacted


def request() -> ModelRequest:
    return ModelRequest(
        model="gpt-x",
        messages=(Message("system", "role"), Message("user", "task")),
        output_name="qualification_score",
        output_schema={"type": "object"},
        metadata={
            "org_id": "org_a",
            "agent_id": "AGT-004",
            "run_id": "run-1",
            "kc_domains_queried": ["KC-02"],
            "context_budget_used": {"system": 10},
        },
    )


RESPONSE = ModelResponse(text="{}", usage=Usage(tokens_in=12, tokens_out=3), model="gpt-x")


def record(req: ModelRequest) -> LlmCallRecord:
    context = CallContext.of(req)
    return LlmCallRecord(
        org_id=context.org_id,
        agent_id=context.agent_id,
        run_id=context.run_id,
        model=RESPONSE.model,
        kc_domains_queried=context.kc_domains_queried,
        tokens_in=RESPONSE.usage.tokens_in,
        tokens_out=RESPONSE.usage.tokens_out,
        context_budget_used=dict(context.context_budget_used),
    )


@pytest.fixture(params=["noop", "langfuse"])
def tracer(request: pytest.FixtureRequest) -> Iterator[Tracer]:
    if request.param == "noop":
        yield NoopTracer()
        return
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    langfuse = LangfuseTracer(
        public_key=f"pk-lf-test-{uuid.uuid4().hex[:8]}",
        secret_key="sk-lf-test",
        host=LOCAL_HOST,
        tracer_provider=provider,
        span_exporter=InMemorySpanExporter(),
    )
    yield langfuse
    langfuse.shutdown()
    provider.shutdown()


def test_it_is_a_tracer_whose_generation_is_a_generation(tracer: Tracer) -> None:
    assert isinstance(tracer, Tracer)
    req = request()
    with tracer.generation(req, CallContext.of(req)) as generation:
        assert isinstance(generation, Generation)
        generation.succeed(record(req), RESPONSE)


def test_a_failed_call_can_be_told_and_its_exception_passes_unchanged(tracer: Tracer) -> None:
    req = request()
    boom = RuntimeError("the provider fell over")
    with (
        pytest.raises(RuntimeError) as caught,
        tracer.generation(req, CallContext.of(req)) as generation,
    ):
        generation.fail("RuntimeError")
        raise boom
    assert caught.value is boom


def test_flush_and_shutdown_return_and_may_repeat(tracer: Tracer) -> None:
    req = request()
    with tracer.generation(req, CallContext.of(req)) as generation:
        generation.succeed(record(req), RESPONSE)
    tracer.flush()
    tracer.flush()
    tracer.shutdown()
    tracer.shutdown()


class _Model:
    model = "gpt-x"

    def __init__(self) -> None:
        self.seen: list[ModelRequest] = []

    def request(self, req: ModelRequest) -> ModelResponse:
        self.seen.append(req)
        return RESPONSE


def test_wrapping_a_model_changes_nothing_it_answers(tracer: Tracer) -> None:
    """What flows see through ``TracedChatModel`` is the inner model's answer, whichever
    tracer is configured."""
    inner = _Model()
    req = request()
    assert TracedChatModel(inner, tracer).request(req) is RESPONSE
    assert inner.seen == [req]
