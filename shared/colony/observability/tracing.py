"""LLM call tracing at the ``ChatModel`` port (SPEC §7).

``TracedChatModel`` wraps any ``ChatModel``: every call becomes one Langfuse *generation*
carrying the mandatory metadata (org_id, agent_id, run_id, kc_domains_queried, tokens_in,
tokens_out, model, context_budget_used per section, latency_ms) and, through ``CallRecorder``,
the same record becomes one ``llm_calls`` row, so the numbers can be analysed without Langfuse.
The logic above the port never sees any of this.

Prompts and answers carry customer data, so neither is sent to Langfuse unless a tracer is
built with ``capture_content=True``; a failed call is marked with the error's type and code
only (``error_summary``), never its message, which may quote the prompt.

Without Langfuse keys ``tracer_from_settings`` returns ``NoopTracer``: no import of the
Langfuse SDK, no thread, no network, no measurable latency.

What a trace may say (an agent of the registry, the spec's budget sections, a measured
latency) is ``colony.observability.trace_schema``'s, checked here before each call and before
its generation ends; keeping the record is ``colony.observability.call_records``'.

The port (``Tracer``, ``Generation``) and the records it carries (``CallContext``,
``LlmCallRecord``) are in ``colony.ports``; this module holds their implementations.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from colony.adapters.text_stream import replay
from colony.errors import ProviderTimeout, error_summary
from colony.observability.call_records import CallRecorder
from colony.observability.telemetry import register_flush, unregister_flush
from colony.observability.trace_schema import check_context, check_record
from colony.ports import (
    CallContext,
    ChatModel,
    Generation,
    LlmCallRecord,
    ModelRequest,
    ModelResponse,
    TextSink,
    Tracer,
    org_tag,
)

if TYPE_CHECKING:
    from langfuse import Langfuse, LangfuseGeneration
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from colony.settings import Settings


class _NoopGeneration:
    __slots__ = ()

    def succeed(self, record: LlmCallRecord, response: ModelResponse) -> None:
        return None

    def fail(self, status_message: str) -> None:
        return None


_NOOP_GENERATION = _NoopGeneration()
_NOOP_CONTEXT: AbstractContextManager[Generation] = nullcontext(_NOOP_GENERATION)


class NoopTracer:
    """The tracer when Langfuse is not configured: does nothing, imports nothing."""

    def generation(
        self, request: ModelRequest, context: CallContext
    ) -> AbstractContextManager[Generation]:
        return _NOOP_CONTEXT

    def annotate(self, call_id: str, metadata: Mapping[str, int | str]) -> None:
        return None

    def flush(self) -> None:
        return None

    def shutdown(self) -> None:
        return None


class _LangfuseGeneration:
    def __init__(self, observation: LangfuseGeneration, capture_content: bool) -> None:
        self._observation = observation
        self._capture_content = capture_content
        self.failed = False

    def succeed(self, record: LlmCallRecord, response: ModelResponse) -> None:
        self._observation.update(
            model=record.model,
            # Langfuse sums every usage key containing "input" into the input total, so the
            # per-section counts live in metadata, not here.
            usage_details={"input": record.tokens_in, "output": record.tokens_out},
            metadata=record.metadata(),
            output=_answer(response) if self._capture_content else None,
        )

    def fail(self, status_message: str) -> None:
        self.failed = True
        self._observation.update(level="ERROR", status_message=status_message)


def _prompt(request: ModelRequest) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in request.messages]


def _answer(response: ModelResponse) -> dict[str, Any]:
    calls = [{"name": c.name, "arguments": dict(c.arguments)} for c in response.tool_calls]
    return {"text": response.text, "tool_calls": calls} if calls else {"text": response.text}


class LangfuseTracer:
    """Langfuse v5 (OpenTelemetry based): one ``generation`` observation per call.

    The client gets its own ``TracerProvider`` unless one is passed (tests pass one with an
    in-memory exporter), so the process-wide OpenTelemetry provider is never replaced.
    ``span_exporter`` replaces the OTLP exporter to Langfuse (tests: an in-memory one).

    Built, it registers ``flush_within`` with ``colony.observability.telemetry`` (so the edge
    flushes its spans before each invocation returns); ``shutdown`` unregisters it.

    ``annotate`` adds metadata learnt after a generation ended (e.g. ``quotes_dropped``, once
    the flow has checked the answer's quotes against their source) to that generation's
    trace: an event observation under the generation, carrying the values as its metadata and
    as trace metadata. The generation of each of the last ``REMEMBERED`` call ids is kept.
    """

    REMEMBERED = 256

    def __init__(
        self,
        *,
        public_key: str,
        secret_key: str,
        host: str | None = None,
        capture_content: bool = False,
        environment: str | None = None,
        tracer_provider: TracerProvider | None = None,
        span_exporter: SpanExporter | None = None,
    ) -> None:
        # lazy: Langfuse and OpenTelemetry load only when its keys are set
        from langfuse import Langfuse
        from opentelemetry.sdk.trace import TracerProvider

        self._owns_provider = tracer_provider is None
        self._provider = tracer_provider or TracerProvider()
        self.capture_content = capture_content
        self._client: Langfuse = Langfuse(
            public_key=public_key,
            secret_key=secret_key,
            # base_url, not host: the SDK lets LANGFUSE_BASE_URL override ``host``.
            base_url=host,
            environment=environment,
            tracer_provider=self._provider,
            span_exporter=span_exporter,
        )
        register_flush(self.flush_within)
        self._generations: OrderedDict[str, tuple[str, str, str]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def client(self) -> Langfuse:
        """The Langfuse client, e.g. to open a run-level span the generations nest under."""
        return self._client

    @contextmanager
    def generation(self, request: ModelRequest, context: CallContext) -> Iterator[Generation]:
        # lazy: Langfuse, loaded with the client in __init__
        from langfuse import propagate_attributes

        failure: BaseException | None = None
        # The org tag is how erasure finds an org's traces (``TraceArchive.trace_ids``).
        with (
            propagate_attributes(tags=[org_tag(context.org_id)]),
            self._client.start_as_current_observation(
                name=f"{context.agent_id}.{request.output_name}",
                as_type="generation",
                model=request.model,
                model_parameters={
                    "temperature": request.temperature,
                    "max_output_tokens": request.max_output_tokens,
                },
                metadata={**context.metadata(), "output_name": request.output_name},
                input=_prompt(request) if self.capture_content else None,
            ) as observation,
        ):
            generation = _LangfuseGeneration(observation, self.capture_content)
            if context.call_id:
                self._remember(context.call_id, observation.trace_id, observation.id, context)
            try:
                yield generation
            except BaseException as error:
                # Caught inside the span so that OpenTelemetry's own exception recording
                # (which copies the message and traceback into the span) never sees it.
                failure = error
                if not generation.failed:
                    generation.fail(error_summary(error))
        if failure is not None:
            raise failure

    def _remember(self, call_id: str, trace_id: str, span_id: str, context: CallContext) -> None:
        with self._lock:
            self._generations[call_id] = (trace_id, span_id, context.org_id)
            self._generations.move_to_end(call_id)
            while len(self._generations) > self.REMEMBERED:
                self._generations.popitem(last=False)

    def annotate(self, call_id: str, metadata: Mapping[str, int | str]) -> None:
        # lazy: Langfuse, loaded with the client in __init__
        from langfuse import propagate_attributes

        with self._lock:
            found = self._generations.get(call_id)
        if found is None or not metadata:
            return
        trace_id, span_id, org_id = found
        values = {str(k): str(v)[:200] for k, v in metadata.items()}
        with propagate_attributes(tags=[org_tag(org_id)], metadata=values):
            self._client.create_event(
                trace_context={"trace_id": trace_id, "parent_span_id": span_id},
                name="annotation",
                metadata={"call_id": call_id, **dict(metadata)},
            )

    def flush(self) -> None:
        self._client.flush()

    def flush_within(self, timeout: float) -> None:
        """Export the ended spans, waiting at most ``timeout`` seconds.

        Not ``flush()``: the client's flush also joins its score and media queues with no
        time limit, and OpenTelemetry's batch processor ignores ``force_flush``'s timeout
        (opentelemetry-python #4568), so the export runs on a short-lived thread that is
        waited for at most ``timeout`` (an export still running then finishes on its own).
        """
        worker = threading.Thread(
            target=self._provider.force_flush,
            kwargs={"timeout_millis": max(1, int(timeout * 1000))},
            name="langfuse-flush",
            daemon=True,
        )
        worker.start()
        worker.join(timeout)

    def shutdown(self) -> None:
        """Flush, stop the SDK's background threads and (if ours) the tracer provider."""
        # lazy: Langfuse internals, only to undo what its shutdown leaves
        from langfuse._client.resource_manager import LangfuseResourceManager

        unregister_flush(self.flush_within)
        resources = self._client._resources
        self._client.shutdown()  # flushes; joins the media-upload and score threads
        if self._owns_provider:
            self._provider.shutdown()  # joins the span processor's export thread
        if resources is None:
            return
        # Langfuse's own shutdown leaves the prompt-cache refresh thread running until atexit
        # and keeps one resource manager per public key for the life of the process, handing
        # this shut-down one to any later client with the same key. Undo both.
        resources.prompt_cache._task_manager.shutdown()
        resources.httpx_client.close()  # the SDK made it (no custom client is passed)
        with LangfuseResourceManager._lock:
            if LangfuseResourceManager._instances.get(resources.public_key) is resources:
                del LangfuseResourceManager._instances[resources.public_key]


def tracer_from_settings(settings: Settings, *, capture_content: bool = False) -> Tracer:
    """``LangfuseTracer`` when both Langfuse keys are set, else ``NoopTracer``."""
    if settings.langfuse_public_key and settings.langfuse_secret_key:
        return LangfuseTracer(
            public_key=settings.langfuse_public_key,
            secret_key=settings.langfuse_secret_key,
            host=settings.langfuse_host,
            capture_content=capture_content,
            environment=settings.env,
        )
    return NoopTracer()


class TracedChatModel:
    """A ``ChatModel`` that traces and records every call of the one it wraps.

    Errors from the inner model propagate unchanged. Successful calls are recorded in
    ``llm_calls`` with the provider's usage, and so is a call that timed out (its prompt was
    sent, maybe billed: ``CallContext.timed_out``); a recorder failure propagates too: the
    record is the system of record for usage. A request whose trace ids break the trace
    schema is refused before the inner model is called. ``clock`` times each call (seconds).
    """

    def __init__(
        self,
        inner: ChatModel,
        tracer: Tracer | None = None,
        recorder: CallRecorder | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._inner = inner
        self._tracer: Tracer = tracer if tracer is not None else NoopTracer()
        self._recorder = recorder
        self._clock = clock

    def request(self, request: ModelRequest) -> ModelResponse:
        return self._traced(request, self._inner.request)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """The inner model's stream (a model without one answers whole, handed out word by
        word), traced and recorded as one call like ``request``."""
        inner = getattr(self._inner, "stream", None)
        if inner is None:
            return self._traced(request, lambda r: replay(self._inner.request(r), on_text))
        return self._traced(request, lambda r: inner(r, on_text))

    def _traced(
        self, request: ModelRequest, call: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        context = check_context(CallContext.of(request))
        with self._tracer.generation(request, context) as generation:
            started = self._clock()
            try:
                response = call(request)
            except Exception as error:
                generation.fail(error_summary(error))
                if self._recorder is not None and isinstance(error, ProviderTimeout):
                    elapsed = (self._clock() - started) * 1000.0
                    self._recorder.record(check_record(context.timed_out(request, elapsed)))
                raise
            latency_ms = (self._clock() - started) * 1000.0
            record = check_record(context.record(response, request, latency_ms))
            generation.succeed(record, response)
        if self._recorder is not None:
            self._recorder.record(record)
        return response
