"""SPEC §7 observability: Langfuse generations, the ``llm_calls`` record, Sentry scrubbing.

Nothing here touches the network: Langfuse gets in-memory exporters (and a localhost host it
never contacts), Sentry a transport that keeps envelopes in a list, and the ``no_network``
fixture fails a test that opens an internet socket or resolves a name.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sentry_sdk
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from colony.errors import ConfigError, NotFound, ProviderError, ValidationFailed
from colony.observability.call_records import CallRecorder, record_row, store_records
from colony.observability.sentry import error_scope, init_sentry, scrub, shutdown_sentry
from colony.observability.tracing import (
    LangfuseTracer,
    NoopTracer,
    TracedChatModel,
    tracer_from_settings,
)
from colony.ports import LlmCallRecord, Message, ModelRequest, ModelResponse, Usage, org_tag
from colony.settings import Settings
from colony.store.db import fetch_all
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("TECH-006", "TECH-007")

LOCAL_HOST = "http://127.0.0.1:9"  # discard port; never contacted
META = "langfuse.observation.metadata."


def planted() -> str:
    """A prompt marker built at run time, so it is not in this file's source context."""
    return f"prompt-{uuid.uuid4().hex}"


class FakeModel:
    """A ``ChatModel`` answering one fixed response (or raising one fixed error)."""

    def __init__(self, response: ModelResponse | None = None, error: Exception | None = None):
        self.response = response or ModelResponse(
            text='{"score": 80}', usage=Usage(tokens_in=1200, tokens_out=85), model="gpt-x-0601"
        )
        self.error = error
        self.calls: list[ModelRequest] = []

    def request(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(request)
        if self.error is not None:
            raise self.error
        return self.response


def make_request(
    prompt: str = "Score this lead.", *, org_id: str = "org_a", **meta: Any
) -> ModelRequest:
    metadata: dict[str, Any] = {
        "org_id": org_id,
        "agent_id": "AGT-004",
        "run_id": "run-1",
        "kc_domains_queried": ["KC-01", "KC-04"],
        "context_budget_used": {"system": 400, "kc": 650, "entity": 150},
    }
    metadata.update(meta)
    return ModelRequest(
        model="gpt-x",
        messages=(Message("system", "You score leads."), Message("user", prompt)),
        output_name="icp_score",
        output_schema={"type": "object"},
        metadata=metadata,
    )


def readings(*seconds: float) -> Callable[[], float]:
    """A clock reading ``seconds`` in turn, as ``time.perf_counter`` would around a call."""
    values = iter(seconds)
    return lambda: next(values)


# -- guards ------------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Refuse (and record) internet connections and name lookups; unix sockets still work."""
    attempts: list[Any] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guard(real: Callable[..., Any]) -> Callable[..., Any]:
        def connect(self: socket.socket, address: Any) -> Any:
            if self.family in (socket.AF_INET, socket.AF_INET6):
                attempts.append(address)
                raise OSError("network access is disabled in this test")
            return real(self, address)

        return connect

    def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("name resolution is disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", guard(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guard(real_connect_ex))
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    assert attempts == [], f"network was attempted: {attempts}"


@pytest.fixture
def no_new_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    leaked = [t.name for t in set(threading.enumerate()) - before]
    assert leaked == [], f"threads left running: {leaked}"


# -- Langfuse ----------------------------------------------------------------------------


@dataclass
class Traced:
    tracer: LangfuseTracer
    captured: InMemorySpanExporter  # every span the provider ended
    exported: InMemorySpanExporter  # what Langfuse's own processor would have sent

    def spans(self) -> list[ReadableSpan]:
        self.tracer.flush()  # drains Langfuse's batch processor into ``exported``
        return [*self.captured.get_finished_spans(), *self.exported.get_finished_spans()]

    def generation(self) -> ReadableSpan:
        self.tracer.flush()
        (span,) = self.captured.get_finished_spans()
        (sent,) = self.exported.get_finished_spans()
        assert sent.context.span_id == span.context.span_id
        return span


@pytest.fixture
def langfuse(no_network: list[Any], no_new_threads: None) -> Iterator[Callable[..., Traced]]:
    opened: list[tuple[LangfuseTracer, TracerProvider]] = []

    def make(*, capture_content: bool = False) -> Traced:
        captured, exported = InMemorySpanExporter(), InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(captured))
        tracer = LangfuseTracer(
            public_key=f"pk-lf-test-{uuid.uuid4().hex[:8]}",
            secret_key="sk-lf-test",
            host=LOCAL_HOST,
            capture_content=capture_content,
            tracer_provider=provider,
            span_exporter=exported,
        )
        opened.append((tracer, provider))
        return Traced(tracer, captured, exported)

    yield make
    for tracer, provider in opened:
        tracer.shutdown()
        provider.shutdown()


def test_generation_carries_the_mandatory_metadata_and_usage(
    langfuse: Callable[..., Traced],
) -> None:
    traced = langfuse()
    inner = FakeModel()
    clock = readings(100.0, 100.25)  # the call took 250 ms
    response = TracedChatModel(inner, traced.tracer, clock=clock).request(make_request())
    assert response is inner.response

    span = traced.generation()
    attrs = span.attributes or {}
    meta = {
        k.removeprefix(META): json.loads(str(v)) for k, v in attrs.items() if k.startswith(META)
    }
    assert attrs["langfuse.observation.type"] == "generation"
    # the trace is tagged with its org, which is how an org's erasure finds its traces
    assert list(attrs["langfuse.trace.tags"]) == [org_tag(meta["org_id"])]
    assert attrs["langfuse.observation.model.name"] == "gpt-x-0601"
    assert json.loads(str(attrs["langfuse.observation.usage_details"])) == {
        "input": 1200,
        "output": 85,
    }
    assert {
        k: meta[k]
        for k in (
            "org_id",
            "agent_id",
            "run_id",
            "kc_domains_queried",
            "tokens_in",
            "tokens_out",
            "model",
            "context_budget_used",
        )
    } == {
        "org_id": "org_a",
        "agent_id": "AGT-004",
        "run_id": "run-1",
        "kc_domains_queried": ["KC-01", "KC-04"],
        "tokens_in": 1200,
        "tokens_out": 85,
        "model": "gpt-x-0601",
        "context_budget_used": {"system": 400, "kc": 650, "entity": 150},
    }
    assert meta["latency_ms"] == 250.0  # what the clock measured around the call
    assert "langfuse.observation.input" not in attrs
    assert "langfuse.observation.output" not in attrs
    assert meta["untrusted_instructions"] == []
    assert span.status.status_code is not StatusCode.ERROR


def test_the_trace_says_what_the_detector_flagged(langfuse: Callable[..., Traced]) -> None:
    """``untrusted_instructions`` (issue 14 item 4) reaches the generation's metadata: labels
    and planted links, not the prompt."""
    traced = langfuse()
    flags = ["asks to ignore the instructions", "asks to insert link http://evil.example"]
    request = make_request()
    request = dataclasses.replace(
        request, metadata={**request.metadata, "untrusted_instructions": flags}
    )
    TracedChatModel(FakeModel(), traced.tracer).request(request)
    attrs = traced.generation().attributes or {}
    assert json.loads(str(attrs[META + "untrusted_instructions"])) == flags


def _texts(span: ReadableSpan) -> list[str]:
    texts = [span.name, str(span.status.description or "")]
    texts += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
    texts += [f"{k}={v}" for k, v in span.resource.attributes.items()]
    for event in span.events:
        texts.append(event.name)
        texts += [f"{k}={v}" for k, v in (event.attributes or {}).items()]
    return texts


def test_prompt_and_answer_text_never_reach_a_span_when_capture_is_off(
    langfuse: Callable[..., Traced],
) -> None:
    traced = langfuse()
    secret = planted()
    answer = ModelResponse(text=f'{{"echo": "{secret}"}}', usage=Usage(10, 5), model="gpt-x")
    TracedChatModel(FakeModel(answer), traced.tracer).request(make_request(secret))

    error = ProviderError(f"the provider choked on: {secret}")
    failing = TracedChatModel(FakeModel(error=error), traced.tracer)
    with pytest.raises(ProviderError) as raised:
        failing.request(make_request(secret))
    assert raised.value is error  # re-raised unchanged

    spans = traced.spans()
    assert len(spans) == 4  # two generations, each captured and exported
    for span in spans:
        assert not [t for t in _texts(span) if secret in t], span.name
    failed = [s for s in spans if s.status.status_code is StatusCode.ERROR]
    assert len(failed) == 2
    for span in failed:
        assert span.status.description == "ProviderError (provider_error)"
        assert (span.attributes or {})["langfuse.observation.level"] == "ERROR"
        assert span.events == ()  # OpenTelemetry's exception recording never saw it


def test_capture_content_flag_sends_prompt_and_answer(langfuse: Callable[..., Traced]) -> None:
    traced = langfuse(capture_content=True)
    TracedChatModel(FakeModel(), traced.tracer).request(make_request("Score Ada Lovelace."))
    attrs = traced.generation().attributes or {}
    assert "Score Ada Lovelace." in str(attrs["langfuse.observation.input"])
    assert json.loads(str(attrs["langfuse.observation.output"])) == {"text": '{"score": 80}'}


def test_generation_nests_under_the_current_span(langfuse: Callable[..., Traced]) -> None:
    traced = langfuse()
    with traced.tracer.client.start_as_current_observation(name="campaign-run") as run:
        TracedChatModel(FakeModel(), traced.tracer).request(make_request())
    traced.tracer.flush()
    by_name = {s.name: s for s in traced.captured.get_finished_spans()}
    child = by_name["AGT-004.icp_score"]
    assert child.parent is not None and child.parent.span_id == int(run.id, 16)


# -- settings and the no-op path ---------------------------------------------------------


def test_tracer_from_settings_is_noop_without_keys() -> None:
    assert isinstance(tracer_from_settings(Settings.from_env({})), NoopTracer)


def test_tracer_from_settings_builds_langfuse_with_keys(
    no_network: list[Any], no_new_threads: None
) -> None:
    settings = Settings.from_env(
        {
            "LANGFUSE_PUBLIC_KEY": f"pk-lf-{uuid.uuid4().hex[:8]}",
            "LANGFUSE_SECRET_KEY": "sk-lf-very-secret",
            "LANGFUSE_HOST": LOCAL_HOST,
            "SENTRY_DSN": "https://sentry-key@o1.ingest.invalid/1",
        }
    )
    text = repr(settings)
    assert "sk-lf-very-secret" not in text and "sentry-key" not in text
    tracer = tracer_from_settings(settings)
    assert isinstance(tracer, LangfuseTracer) and not tracer.capture_content
    tracer.shutdown()


@pytest.mark.parametrize("given", ["LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"])
def test_one_langfuse_key_without_the_other_fails_at_start_up(given: str) -> None:
    missing = ({"LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"} - {given}).pop()
    with pytest.raises(ConfigError, match=missing):
        Settings.from_env({given: "x"})


def test_noop_path_returns_the_inner_response_untouched(
    no_network: list[Any], no_new_threads: None
) -> None:
    inner = FakeModel()
    model = TracedChatModel(inner, NoopTracer())
    request = make_request()
    assert model.request(request) is inner.response
    assert inner.calls == [request]  # the very same request object, unmodified

    error = ProviderError("boom")
    with pytest.raises(ProviderError) as raised:
        TracedChatModel(FakeModel(error=error)).request(request)
    assert raised.value is error


@pytest.mark.parametrize(
    "meta",
    [
        {"org_id": None},
        {"agent_id": ""},
        {"run_id": 7},
        {"kc_domains_queried": "KC-01"},
        {"context_budget_used": {"system": "many"}},
    ],
)
def test_missing_or_malformed_trace_metadata_is_refused_before_the_call(
    meta: dict[str, Any],
) -> None:
    inner = FakeModel()
    with pytest.raises(ValidationFailed):
        TracedChatModel(inner).request(make_request(**meta))
    assert inner.calls == []


# -- llm_calls -------------------------------------------------------------------------


@pytest.fixture
def orgs(testdb: PgDB) -> PgDB:
    db = testdb.app()
    for org in ("org_a", "org_b"):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    return testdb


CALL_COLUMNS = (
    "SELECT org_id, agent_id, run_id, model, kc_domains_queried, tokens_in, tokens_out, "
    "context_budget_used, latency_ms FROM llm_calls ORDER BY id"
)


def test_recorder_writes_one_row_per_call_visible_only_in_its_org(orgs: PgDB) -> None:
    db = orgs.app()
    model = TracedChatModel(FakeModel(), NoopTracer(), CallRecorder(db))
    model.request(make_request())
    with db.transaction("org_a") as cur:
        (row,) = fetch_all(cur, CALL_COLUMNS)
    latency = row.pop("latency_ms")
    assert isinstance(latency, float) and latency > 0  # timed by the real clock
    assert row == {
        "org_id": "org_a",
        "agent_id": "AGT-004",
        "run_id": "run-1",
        "model": "gpt-x-0601",
        "kc_domains_queried": ["KC-01", "KC-04"],
        "tokens_in": 1200,
        "tokens_out": 85,
        "context_budget_used": {"system": 400, "kc": 650, "entity": 150},
    }

    model.request(
        make_request(org_id="org_b", run_id=None, kc_domains_queried=[], context_budget_used={})
    )
    with db.transaction("org_a") as cur:
        assert len(fetch_all(cur, CALL_COLUMNS)) == 1
    with db.transaction("org_b") as cur:
        (row_b,) = fetch_all(cur, CALL_COLUMNS)
    assert (row_b["org_id"], row_b["run_id"], row_b["kc_domains_queried"]) == ("org_b", None, [])
    assert row_b["context_budget_used"] == {}
    with db.transaction(None) as cur:
        assert fetch_all(cur, CALL_COLUMNS) == []


def test_a_failed_call_records_nothing(orgs: PgDB) -> None:
    db = orgs.app()
    model = TracedChatModel(FakeModel(error=ProviderError("down")), NoopTracer(), CallRecorder(db))
    with pytest.raises(ProviderError):
        model.request(make_request())
    with db.transaction("org_a") as cur:
        assert fetch_all(cur, CALL_COLUMNS) == []


def test_langfuse_and_postgres_keep_the_same_record(
    orgs: PgDB, langfuse: Callable[..., Traced]
) -> None:
    traced, db = langfuse(), orgs.app()
    TracedChatModel(FakeModel(), traced.tracer, CallRecorder(db)).request(make_request())
    attrs = traced.generation().attributes or {}
    with db.transaction("org_a") as cur:
        (row,) = fetch_all(cur, CALL_COLUMNS)
    for column, value in row.items():
        assert json.loads(str(attrs[META + column])) == value, column


@pytest.mark.parametrize(
    ("meta", "refusal"),
    [
        ({"agent_id": "icp_scorer"}, "agent_id 'icp_scorer' is not an agent"),
        ({"agent_id": "AGT-011"}, "agent_id 'AGT-011' is not an agent"),
        ({"agent_id": "AGT-006/pass1"}, "agent_id 'AGT-006/pass1' is not an agent"),
        ({"context_budget_used": {"system": 4, "entities": 1}}, "counts 'entities', which"),
        ({"context_budget_used": {"tools": 9}}, "counts 'tools', which SPEC §5 does not"),
    ],
    ids=["a-name", "no-such-agent", "a-profile", "entities", "tools"],
)
def test_a_trace_the_spec_does_not_know_is_refused_before_the_call(
    meta: dict[str, Any], refusal: str, orgs: PgDB, langfuse: Callable[..., Traced]
) -> None:
    """An agent id outside the registry, or a section SPEC §5 has no budget for, would be
    kept for analysis that can never group it: the call is refused, nothing is traced or
    recorded, and the error names the field and the value."""
    traced, db, inner = langfuse(), orgs.app(), FakeModel()
    model = TracedChatModel(inner, traced.tracer, CallRecorder(db))
    with pytest.raises(ValidationFailed, match=re.escape(refusal)):
        model.request(make_request(**meta))
    assert inner.calls == [] and traced.spans() == []
    with db.transaction("org_a") as cur:
        assert fetch_all(cur, CALL_COLUMNS) == []


def test_a_call_the_clock_did_not_time_is_not_kept(
    orgs: PgDB, langfuse: Callable[..., Traced]
) -> None:
    """A latency of 0 ms is not a measurement; the generation says the call failed the trace
    schema and no ``llm_calls`` row is written."""
    traced, db = langfuse(), orgs.app()
    model = TracedChatModel(FakeModel(), traced.tracer, CallRecorder(db), clock=readings(7.0, 7.0))
    with pytest.raises(ValidationFailed, match=re.escape("latency_ms 0.0 is not a measured")):
        model.request(make_request())
    assert traced.generation().status.status_code is StatusCode.ERROR
    with db.transaction("org_a") as cur:
        assert fetch_all(cur, CALL_COLUMNS) == []


def _record(**changes: Any) -> LlmCallRecord:
    fields: dict[str, Any] = {
        "org_id": "org_a",
        "agent_id": "AGT-004",
        "run_id": "run-1",
        "model": "gpt-x-0601",
        "kc_domains_queried": ("KC-02",),
        "tokens_in": 10,
        "tokens_out": 2,
        "context_budget_used": {"system": 8, "task": 2},
        "latency_ms": 12.5,
    }
    return LlmCallRecord(**{**fields, **changes})


@pytest.mark.parametrize(
    "changes",
    [
        {"latency_ms": None},
        {"latency_ms": 0.0},
        {"latency_ms": -3.0},
        {"latency_ms": float("nan")},
        {"latency_ms": float("inf")},
        {"latency_ms": True},
        {"agent_id": "qualifier"},
        {"context_budget_used": {"entities": 3}},
    ],
    ids=["unmeasured", "zero", "negative", "nan", "inf", "bool", "agent", "section"],
)
def test_a_record_that_breaks_the_schema_is_not_written_either_way(
    orgs: PgDB, changes: dict[str, Any]
) -> None:
    """Both ways a row is written (``store_records``, and ``record_row`` for the chat turn's
    one statement) check the record; a batch with one bad record keeps none of it."""
    db = orgs.app()
    with pytest.raises(ValidationFailed, match=r"latency_ms|agent_id|context_budget_used"):
        record_row(_record(**changes))
    with pytest.raises(ValidationFailed), db.transaction("org_a") as cur:
        store_records(cur, [_record(), _record(**changes)])
    with db.transaction("org_a") as cur:
        assert fetch_all(cur, CALL_COLUMNS) == []
        store_records(cur, [_record()])  # the same record, measured and named: kept
        assert len(fetch_all(cur, CALL_COLUMNS)) == 1


# -- Sentry ------------------------------------------------------------------------------


class CollectingTransport(Transport):
    """Keeps envelopes instead of sending them: the DSN host is never contacted."""

    def __init__(self) -> None:
        super().__init__()
        self.envelopes: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope)

    def events(self) -> list[dict[str, Any]]:
        return [
            item.payload.json
            for envelope in self.envelopes
            for item in envelope.items
            if item.type == "event" and item.payload.json is not None
        ]


@pytest.fixture
def sentry(
    monkeypatch: pytest.MonkeyPatch, no_network: list[Any], no_new_threads: None
) -> Iterator[CollectingTransport]:
    monkeypatch.setenv("SENTRY_RELEASE", "test")  # else the SDK shells out to git for one
    transport = CollectingTransport()
    settings = Settings.from_env({"SENTRY_DSN": "https://public@o1.ingest.invalid/1"})
    assert init_sentry(settings, transport=transport)
    try:
        yield transport
    finally:
        shutdown_sentry()
    assert not sentry_sdk.get_client().is_active()


def _answer_badly(prompt: str) -> None:
    transcript = f"Customer: I want to cancel. Context: {prompt}"
    messages = [{"role": "user", "content": transcript}]
    try:
        raise ValueError(f"unparseable: {messages}")
    except ValueError as cause:
        raise ProviderError(f"model rejected the prompt {transcript!r}") from cause


def test_sentry_events_carry_the_ids_and_never_the_prompt(
    sentry: CollectingTransport, caplog: pytest.LogCaptureFixture
) -> None:
    secret = planted()
    with error_scope("org_a", "run-1", "AGT-004"):
        sentry_sdk.add_breadcrumb(category="llm", message=f"asked {secret}", data={"p": secret})
        logging.getLogger("colony.test").warning("retrying prompt %s", secret)
        sentry_sdk.capture_message(f"odd answer for {secret}")
        logging.getLogger("colony.test").error("gave up on %s", secret)
        try:
            _answer_badly(secret)
        except ProviderError:
            sentry_sdk.capture_exception()
    with pytest.raises(ProviderError), error_scope("org_a", "run-2", "AGT-004"):
        _answer_badly(secret)  # escapes the scope: reported there, re-raised
    sentry_sdk.flush()

    events = sentry.events()
    assert len(events) == 4
    for envelope in sentry.envelopes:
        assert secret.encode() not in envelope.serialize()
    for event in events:
        assert {k: event["tags"][k] for k in ("org_id", "agent_id")} == {
            "org_id": "org_a",
            "agent_id": "AGT-004",
        }
        assert event["tags"]["run_id"] in ("run-1", "run-2")
    errors = [e for e in events if "exception" in e]
    assert len(errors) == 2
    for event in errors:
        values = {v["type"]: v["value"] for v in event["exception"]["values"]}
        assert values == {
            "ValueError": "ValueError",
            "ProviderError": "ProviderError (provider_error)",
        }
        frames = [f for v in event["exception"]["values"] for f in v["stacktrace"]["frames"]]
        assert frames and not [f for f in frames if "vars" in f]
        assert any(f["function"] == "_answer_badly" for f in frames)


def test_caller_errors_escaping_the_scope_are_not_reported(sentry: CollectingTransport) -> None:
    with pytest.raises(NotFound), error_scope("org_a", None, "AGT-004"):
        raise NotFound("no such contact")
    sentry_sdk.flush()
    assert sentry.events() == []


def test_scrub_keeps_an_allowlist_of_the_event() -> None:
    secret = planted()
    event = {
        "level": "error",
        "tags": {"org_id": "org_a", "run_id": "r", "agent_id": "a"},
        "message": secret,
        "logentry": {"message": "failed %s", "params": [secret]},
        "extra": {"sys.argv": ["colony", "chat", secret]},
        "user": {"email": secret},
        "request": {
            "method": "POST",
            "url": f"https://api.example/run?q={secret}",
            "data": {"prompt": secret},
            "query_string": f"q={secret}",
            "headers": {"X-Prompt": secret},
        },
        "contexts": {
            "runtime": {"name": "CPython"},
            "trace": {"trace_id": "t", "span_id": "s", "data": {"prompt": secret}},
            "custom": {"prompt": secret},
        },
        "breadcrumbs": {"values": [{"category": "http", "message": secret, "data": {"x": secret}}]},
        "exception": {
            "values": [
                {
                    "type": "OutputInvalid",
                    "value": secret,
                    "stacktrace": {"frames": [{"function": "f", "vars": {"prompt": secret}}]},
                }
            ]
        },
        "threads": {"values": [{"id": 1, "stacktrace": {"frames": [{"vars": {"p": secret}}]}}]},
    }
    clean = scrub(event, {})
    assert secret not in json.dumps(clean)
    assert clean["tags"] == event["tags"]
    assert clean["request"] == {"method": "POST", "url": "https://api.example/run"}
    assert clean["contexts"] == {
        "runtime": {"name": "CPython"},
        "trace": {"trace_id": "t", "span_id": "s"},
    }
    assert clean["exception"]["values"][0]["value"] == "OutputInvalid"


def test_sentry_is_a_noop_without_a_dsn(no_new_threads: None) -> None:
    assert init_sentry(Settings.from_env({})) is False
    assert not sentry_sdk.get_client().is_active()
    error = ProviderError("boom")
    with pytest.raises(ProviderError) as raised, error_scope("org_a", "r", "a"):
        raise error
    assert raised.value is error


def test_what_a_flow_learns_after_the_call_is_added_to_its_trace(
    langfuse: Callable[..., Traced],
) -> None:
    """``annotate`` (issue 15 item 4: ``quotes_dropped``) puts an event under the generation
    of that call id, in its trace and tagged with its org, carrying the values as its own
    metadata and as trace metadata; an unknown call id adds nothing."""
    traced = langfuse()
    TracedChatModel(FakeModel(), traced.tracer).request(make_request(call_id="call-7"))
    traced.tracer.annotate("call-7", {"quotes_dropped": 2})
    traced.tracer.annotate("call-unknown", {"quotes_dropped": 5})
    traced.tracer.flush()
    spans = traced.captured.get_finished_spans()
    (generation,) = [s for s in spans if s.name == "AGT-004.icp_score"]
    (event,) = [s for s in spans if s.name == "annotation"]
    attrs = event.attributes or {}
    assert event.context.trace_id == generation.context.trace_id
    assert event.parent is not None and event.parent.span_id == generation.context.span_id
    assert json.loads(str(attrs[META + "quotes_dropped"])) == 2
    assert json.loads(str(attrs[META + "call_id"])) == "call-7"
    assert json.loads(str(attrs["langfuse.trace.metadata.quotes_dropped"])) == "2"
    assert list(attrs["langfuse.trace.tags"]) == [org_tag("org_a")]
