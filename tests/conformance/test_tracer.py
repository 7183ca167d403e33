"""The ``Tracer`` port's conformance suite: the no-op default and Langfuse.

- ``noop``: ``colony.observability.tracing.NoopTracer``, what every function runs without
  Langfuse keys (and what flow tests get);
- ``langfuse``: ``LangfuseTracer`` with its real OpenTelemetry pipeline on a provider of its
  own (as in production), exporting into an in-memory exporter (the one part stood in:
  nothing may reach a Langfuse server from here; the host is a discard port that is never
  contacted).

The contract (``colony.ports.Tracer``): ``generation(request, context)`` is a context manager
yielding a ``Generation``; ``succeed`` and ``fail`` may be called on it; an exception raised
inside leaves the block unchanged (the same object, not wrapped); ``flush`` and ``shutdown``
return, and may be called more than once. What a tracer keeps (the no-op nothing; Langfuse an
observation per generation and per ``annotate``d note, tagged with the org) has reached its
backend when ``flush`` returns, once each; after ``shutdown`` no thread it started is left.
The rest of what Langfuse records is its own test's (``tests/test_observability.py``); here
both must behave alike for the code that wraps the model (``TracedChatModel``).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import ReadableSpan
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
from tests.conformance.exercise import Exercise, exercised

LOCAL_HOST = "http://127.0.0.1:9"  # discard port: never contacted
META = "langfuse.observation.metadata."


def request(call_id: str = "call-1") -> ModelRequest:
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
            "call_id": call_id,
        },
    )


RESPONSE = ModelResponse(text="{}", usage=Usage(tokens_in=12, tokens_out=3), model="gpt-x")
NAME = "AGT-004.qualification_score"  # what a kept generation of ``request()`` is called


def record(req: ModelRequest) -> LlmCallRecord:
    return CallContext.of(req).record(RESPONSE, req, latency_ms=12.5)


# (observation name, type, level, call id, tags): the part of a kept observation this
# suite compares; each adapter's own test checks the rest (tests/test_observability.py).
Kept = tuple[str, str, str, str, tuple[str, ...]]


@dataclass
class Harness:
    tracer: Tracer
    kept: Callable[[], list[Kept]]  # what reached the tracer's backend so far, in order
    keeps: bool  # False for a tracer that keeps nothing (the no-op)
    threads_before: set[threading.Thread]  # running before the tracer was built


def _kept(exported: InMemorySpanExporter) -> list[Kept]:
    def kept(span: ReadableSpan) -> Kept:
        attrs = span.attributes or {}
        return (
            span.name,
            str(attrs["langfuse.observation.type"]),
            str(attrs.get("langfuse.observation.level", "")),
            json.loads(str(attrs[META + "call_id"])),
            tuple(attrs["langfuse.trace.tags"]),  # type: ignore[arg-type]
        )

    return [kept(span) for span in exported.get_finished_spans()]


@pytest.fixture(params=["noop", "langfuse"])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    before = set(threading.enumerate())
    if request.param == "noop":
        yield Harness(NoopTracer(), list, False, before)
        return
    exported = InMemorySpanExporter()
    langfuse = LangfuseTracer(  # on a provider of its own, as tracer_from_settings builds it
        public_key=f"pk-lf-test-{uuid.uuid4().hex[:8]}",
        secret_key="sk-lf-test",
        host=LOCAL_HOST,
        span_exporter=exported,  # what Langfuse's own processor would send
    )
    yield Harness(langfuse, lambda: _kept(exported), True, before)
    langfuse.shutdown()


def test_it_is_a_tracer_whose_generation_is_a_generation(harness: Harness) -> None:
    """Every method of both ports: a call that succeeded, one that failed, a note added to
    the first afterwards, then a flush: what is kept is those three, tagged with the org."""
    generations = Exercise(Generation)
    with exercised(Tracer, harness.tracer) as tracer:
        ok, bad = request("call-1"), request("call-2")
        with tracer.generation(ok, CallContext.of(ok)) as generation:
            assert generations(generation).succeed(record(ok), RESPONSE) is None
        boom = RuntimeError("the provider fell over")
        with pytest.raises(RuntimeError), tracer.generation(bad, CallContext.of(bad)) as generation:
            assert generations(generation).fail("RuntimeError") is None
            raise boom
        assert tracer.annotate("call-1", {"quotes_dropped": 2}) is None
        assert tracer.flush() is None
        kept = harness.kept()
        assert tracer.shutdown() is None
    generations.check()
    org = ("org:org_a",)
    assert kept == (
        [
            (NAME, "generation", "", "call-1", org),
            (NAME, "generation", "ERROR", "call-2", org),
            ("annotation", "event", "", "call-1", org),
        ]
        if harness.keeps
        else []
    )


def test_a_failed_call_can_be_told_and_its_exception_passes_unchanged(harness: Harness) -> None:
    req = request()
    boom = RuntimeError("the provider fell over")
    with (
        pytest.raises(RuntimeError) as caught,
        harness.tracer.generation(req, CallContext.of(req)) as generation,
    ):
        generation.fail("RuntimeError")
        raise boom
    assert caught.value is boom


def test_flush_and_shutdown_return_and_may_repeat(harness: Harness) -> None:
    """A flush hands on what ended before it, once (a second adds nothing); shutting down
    twice is fine, and afterwards no thread the tracer started is left running."""
    tracer, req = harness.tracer, request()
    with tracer.generation(req, CallContext.of(req)) as generation:
        generation.succeed(record(req), RESPONSE)
    expected = [(NAME, "generation", "", "call-1", ("org:org_a",))] if harness.keeps else []
    assert tracer.flush() is None and harness.kept() == expected
    assert tracer.flush() is None and harness.kept() == expected
    assert tracer.shutdown() is None and tracer.shutdown() is None
    assert harness.kept() == expected
    assert [t.name for t in set(threading.enumerate()) - harness.threads_before] == []


class _Model:
    model = "gpt-x"

    def __init__(self) -> None:
        self.seen: list[ModelRequest] = []

    def request(self, req: ModelRequest) -> ModelResponse:
        self.seen.append(req)
        return RESPONSE


def test_wrapping_a_model_changes_nothing_it_answers(harness: Harness) -> None:
    """What flows see through ``TracedChatModel`` is the inner model's answer, whichever
    tracer is configured."""
    inner = _Model()
    req = request()
    assert TracedChatModel(inner, harness.tracer).request(req) is RESPONSE
    assert inner.seen == [req]
