"""Telemetry is flushed before an invocation returns (``colony.observability.telemetry``).

Langfuse spans wait in the SDK's batching span processor and Sentry events in a transport
that only delivers on flush, so each test here fails unless the edge flushed them before the
response reached the client. Everything runs through real functions-framework apps.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from colony.adapters.embedding import OfflineHashEmbedder
from colony.context import templates
from colony.errors import ConfigError, NotFound, ProviderError, UpstreamError
from colony.flows.campaigns import campaign
from colony.knowledge import KnowledgeStore
from colony.local.demo import load_demo
from colony.observability.logs import TRACE_FIELD
from colony.observability.telemetry import flush_telemetry, register_flush, unregister_flush
from colony.observability.tracing import TracedChatModel
from colony.ports import Message, ModelRequest, ModelResponse, Usage
from colony.runtime import edge
from colony.runtime.deps import build_deps, set_deps_for_tests
from colony.store import fetch_all
from colony.testing.inline import InlineTransport, Sent
from colony.testing.telemetry import (
    BatchedLangfuse,
    QueuedSentryTransport,
    batched_langfuse,
    queued_sentry,
)
from tests.apps import registered_app, source_loader
from tests.conftest import PgDB

HTTP_SOURCE = """
import flask

from colony.runtime.edge import http_json

WORK = []  # set by the test: what a request does


@http_json(methods=("POST",), paths=("/", "/stream"))
def api(req):
    if req.path == "/stream":
        def events():
            yield "data: started\\n\\n"
            WORK[0]()
            yield "data: done\\n\\n"

        return flask.Response(events(), mimetype="text/event-stream")
    return WORK[0]()
"""

PUBSUB_SOURCE = """
from colony.runtime.edge import MemoryRejections, pubsub_handler
from colony.settings import Settings

WORK = []
RECORDER = MemoryRejections()
SETTINGS = Settings()  # local: no OIDC token needed (tests/test_invoker.py checks them)


@pubsub_handler("campaign", recorder=lambda: RECORDER, config=lambda: SETTINGS)
def on_event(event, event_id):
    WORK[0]()
"""

START = {"kind": "campaign.start", "org_id": "org-a", "campaign_id": "c-1", "run_id": "r-1"}


def planted() -> str:
    """Payload text built at run time, so it is in no source line a traceback could show."""
    return f"payload-{uuid.uuid4().hex}"


class Model:
    """A ``ChatModel`` that answers, or raises an error quoting the prompt."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def request(self, request: ModelRequest) -> ModelResponse:
        if self.fail:
            raise ProviderError(f"the provider refused: {request.messages[-1].content}")
        return ModelResponse(text="{}", usage=Usage(tokens_in=10, tokens_out=2), model="m-1")


def model_request(prompt: str) -> ModelRequest:
    return ModelRequest(
        model="m-1",
        messages=(Message("system", "Score leads."), Message("user", prompt)),
        output_name="icp_score",
        output_schema={"type": "object"},
        metadata={"org_id": "org-a", "agent_id": "AGT-004", "run_id": "r-1"},
    )


@pytest.fixture(autouse=True)
def _fresh_deps() -> Iterator[None]:
    yield
    set_deps_for_tests(None)


@pytest.fixture
def langfuse(monkeypatch: pytest.MonkeyPatch) -> Iterator[BatchedLangfuse]:
    monkeypatch.setenv("LANGFUSE_FLUSH_INTERVAL", "3600")  # only a flush exports
    with batched_langfuse() as traced:
        yield traced


@pytest.fixture
def sentry(monkeypatch: pytest.MonkeyPatch) -> Iterator[QueuedSentryTransport]:
    monkeypatch.setenv("SENTRY_RELEASE", "test")  # else the SDK runs git for one
    with queued_sentry() as transport:
        yield transport


@pytest.fixture
def load_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str, str, str], tuple[Any, Any]]:
    """The real functions-framework app over ``source``: its test client and module."""
    load = source_loader(tmp_path, monkeypatch)
    return lambda source, target, signature: load(source, target, signature)[:2]


def push(data: dict[str, Any], message_id: str = "m-1") -> dict[str, Any]:
    raw = base64.b64encode(json.dumps(data).encode()).decode()
    return {"message": {"data": raw, "messageId": message_id}, "subscription": "s"}


# ----------------------------------------------------------------------------- the registry


def test_flush_telemetry_calls_each_registered_flush_once_with_the_time_left() -> None:
    calls: list[tuple[str, float]] = []

    def first(timeout: float) -> None:
        calls.append(("first", timeout))

    def second(timeout: float) -> None:
        calls.append(("second", timeout))

    register_flush(first)
    register_flush(first)  # once, however often
    register_flush(second)
    try:
        flush_telemetry(1.5)
    finally:
        unregister_flush(first)
        unregister_flush(second)
    assert [name for name, _ in calls] == ["first", "second"]
    assert all(0 < timeout <= 1.5 for _, timeout in calls)
    flush_telemetry(1.5)
    assert len(calls) == 2  # unregistered: not called again


def test_the_time_bound_is_shared_and_a_failing_flush_does_not_stop_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    never = threading.Event()
    called: list[str] = []

    def broken(timeout: float) -> None:
        called.append("broken")
        raise RuntimeError(planted())

    def slow(timeout: float) -> None:
        called.append("slow")
        never.wait(timeout + 0.05)  # uses up (a little more than) the budget it was given

    def late(timeout: float) -> None:
        called.append("late")

    for flush in (broken, slow, late):
        register_flush(flush)
    try:
        started = time.monotonic()
        flush_telemetry(0.3)
        elapsed = time.monotonic() - started
    finally:
        for flush in (broken, slow, late):
            unregister_flush(flush)
    assert called == ["broken", "slow"]  # nothing left for the last one
    assert elapsed < 1.0
    assert "telemetry flush failed: RuntimeError" in caplog.text
    assert "payload-" not in caplog.text
    assert "ran out of its 0.3s" in caplog.text


def test_langfuse_registers_its_bounded_flush_while_it_runs(langfuse: BatchedLangfuse) -> None:
    TracedChatModel(Model(), langfuse.tracer).request(model_request("hello"))
    assert langfuse.spans() == ()  # waiting in the batch processor
    flush_telemetry()
    assert len(langfuse.spans()) == 1


def test_a_stuck_langfuse_export_is_abandoned_at_the_deadline(langfuse: BatchedLangfuse) -> None:
    release = threading.Event()
    real_export = langfuse.exported.export

    def stuck(spans: Any) -> Any:
        release.wait(30)
        return real_export(spans)

    langfuse.exported.export = stuck  # type: ignore[method-assign]
    try:
        TracedChatModel(Model(), langfuse.tracer).request(model_request("hello"))
        started = time.monotonic()
        langfuse.tracer.flush_within(0.2)
        assert time.monotonic() - started < 1.0  # the SDK's own flush would wait it out
    finally:
        release.set()
    langfuse.tracer.flush()  # the export that was stuck completes
    assert len(langfuse.spans()) == 1


# ----------------------------------------------------------------------------- at the edge


def test_http_function_flushes_spans_and_events_before_it_answers(
    load_function: Any, langfuse: BatchedLangfuse, sentry: QueuedSentryTransport
) -> None:
    client, module = load_function(HTTP_SOURCE, "api", "http")
    secret = planted()
    model = Model()

    def call() -> dict[str, str]:
        return {"text": TracedChatModel(model, langfuse.tracer).request(model_request(secret)).text}

    module.WORK.append(call)
    assert client.post("/", json={}).status_code == 200
    (span,) = langfuse.spans()
    assert span.name == "AGT-004.icp_score"

    model.fail = True
    response = client.post("/", json={})
    assert response.status_code == 503
    failed = [s for s in langfuse.spans() if s.status.status_code is StatusCode.ERROR]
    assert len(failed) == 1
    (event,) = sentry.events()  # flushed before the response: nothing left queued
    assert sentry.queued == []
    assert event["exception"]["values"][-1]["value"] == "ProviderError (provider_error)"
    assert secret.encode() not in sentry.serialized()


def test_pubsub_function_flushes_spans_and_events_before_it_answers(
    load_function: Any, langfuse: BatchedLangfuse, sentry: QueuedSentryTransport
) -> None:
    client, module = load_function(PUBSUB_SOURCE, "on_event", "cloudevent")
    secret = planted()
    failing = TracedChatModel(Model(fail=True), langfuse.tracer)
    module.WORK.append(lambda: failing.request(model_request(secret)))
    response = client.post("/", json=push(START))
    assert response.status_code == 500  # retried by Pub/Sub
    (span,) = langfuse.spans()
    assert span.status.status_code is StatusCode.ERROR
    (event,) = sentry.events()
    assert event["tags"] == {"org_id": "org-a", "run_id": "r-1", "agent_id": "AGT-002"}
    assert secret.encode() not in sentry.serialized()


def test_misconfiguration_is_one_event_too(
    load_function: Any, sentry: QueuedSentryTransport, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``ConfigError`` is an ``InternalError``, ours to fix: retried and reported."""
    client, module = load_function(PUBSUB_SOURCE, "on_event", "cloudevent")
    secret = planted()

    def misconfigured() -> None:
        raise ConfigError(f"COLONY_X={secret!r} is not one of a, b")

    module.WORK.append(misconfigured)
    capsys.readouterr()
    assert client.post("/", json=push(START)).status_code == 500
    (event,) = sentry.events()
    assert event["exception"]["values"][-1]["value"] == "ConfigError (config_error)"
    assert secret.encode() not in sentry.serialized()
    assert secret not in capsys.readouterr().err


def test_a_broken_template_over_http_is_a_fixed_500_and_one_event(
    load_function: Any, sentry: QueuedSentryTransport, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real ``render`` given a variable the template does not use (a renamed field): our
    fault, not the caller's. A 500 whose message is the fixed sentence, never the
    exception's text, and one Sentry event flushed before the response."""
    client, module = load_function(HTTP_SOURCE, "api", "http")
    secret = planted()
    module.WORK.append(lambda: templates.render("system", {secret: "x"}))
    capsys.readouterr()
    response = client.post("/", json={})
    assert response.status_code == 500
    assert response.get_json() == {
        "error": {"code": "template_error", "message": edge.INTERNAL_MESSAGE}
    }
    (event,) = sentry.events()
    assert sentry.queued == []
    assert event["exception"]["values"][-1]["value"] == "TemplateError (template_error)"
    assert secret.encode() not in sentry.serialized()
    out = capsys.readouterr()
    assert "POST / failed: TemplateError (template_error)" in out.err
    assert secret not in out.err + out.out


def test_a_caller_error_over_http_is_its_4xx_and_no_event(
    load_function: Any, sentry: QueuedSentryTransport
) -> None:
    client, module = load_function(HTTP_SOURCE, "api", "http")

    def missing() -> None:
        raise NotFound("approval item 'ai-1' does not exist in this org")

    module.WORK.append(missing)
    response = client.post("/", json={})
    assert response.status_code == 404
    assert response.get_json() == {
        "error": {"code": "not_found", "message": "approval item 'ai-1' does not exist in this org"}
    }
    assert sentry.events() == [] and sentry.queued == []


def test_a_streamed_response_flushes_when_the_stream_ends(
    load_function: Any, langfuse: BatchedLangfuse
) -> None:
    client, module = load_function(HTTP_SOURCE, "api", "http")
    traced = TracedChatModel(Model(), langfuse.tracer)
    module.WORK.append(lambda: traced.request(model_request("hi")))
    response = client.post("/stream", json={}, buffered=False)
    assert response.status_code == 200
    assert langfuse.spans() == ()  # the stream has not run yet: nothing to flush
    assert response.get_data(as_text=True) == "data: started\n\ndata: done\n\n"
    response.close()  # what the server does once the last byte is sent
    (span,) = langfuse.spans()
    assert span.name == "AGT-004.icp_score"


# ----------------------------------------------------------------------------- a real flow

ORG = "org_zoomprop_demo"  # the demo org (colony.local.demo)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


class RefusingTransport:
    """Pub/Sub refusing every publish with an error that quotes the message (the payload)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.refused: list[bytes] = []

    def publish(self, topic: str, data: bytes, attributes: Mapping[str, str]) -> str:
        self.refused.append(data)
        raise UpstreamError(f"{self.marker}: {topic} refused {data.decode()}")

    def schedule(
        self, queue: str, target: str, body: bytes, *, task_id: str, delay_seconds: float = 0.0
    ) -> str:
        raise UpstreamError(f"{self.marker}: {queue} refused {body.decode()}")


def as_push(sent: Sent) -> dict[str, Any]:
    """A published message as Pub/Sub pushes it."""
    return {
        "message": {
            "data": base64.b64encode(sent.data).decode(),
            "messageId": sent.message_id,
            "attributes": dict(sent.attributes),
        },
        "subscription": "projects/colony-test/subscriptions/colony-campaign-push",
    }


def json_lines(text: str) -> list[dict[str, Any]]:
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "severity" in entry:
            entries.append(entry)
    return entries


def test_a_failure_deep_in_a_flow_is_one_log_line_and_one_flushed_event(
    testdb: PgDB,
    sentry: QueuedSentryTransport,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The real campaign function starts a run (AGT-002): its anti-ICP step runs, then the
    handoff of the first contact fails deep in the flow, at the transport, with an error
    quoting the event it was publishing. One ERROR line with the trace and the ids, one
    Sentry event flushed before the response, and the payload in neither."""
    monkeypatch.setenv("COLONY_GCP_PROJECT", "colony-test")
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    launcher = InlineTransport()
    setup = build_deps(testdb.settings, db=db, transport=launcher, knowledge=knowledge)
    with db.transaction(ORG) as cur:
        (contact,) = fetch_all(cur, "SELECT id FROM contacts WHERE external_id = 'P-001'")
    campaign_id = campaign.create_campaign(
        setup, ORG, name="deep", angle="Signal", tier="T1", contact_ids=[contact["id"]]
    )
    run_id = campaign.launch(setup, ORG, campaign_id)
    refusing = RefusingTransport(planted())
    set_deps_for_tests(build_deps(testdb.settings, db=db, transport=refusing))
    client = registered_app("campaign", monkeypatch)
    start = launcher.pending.popleft()
    capsys.readouterr()  # only this request's lines from here

    headers = {"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}
    response = client.post("/", json=as_push(start), headers=headers)

    assert response.status_code == 500  # Pub/Sub retries
    (refused,) = refusing.refused
    out = capsys.readouterr()
    (line,) = json_lines(out.err + out.out)
    assert line["severity"] == "ERROR"
    assert line[TRACE_FIELD] == f"projects/colony-test/traces/{TRACE_ID}"
    ids = (line["function"], line["org_id"], line["run_id"], line["event_id"])
    assert ids == ("campaign", ORG, run_id, start.message_id)
    message = line["message"]
    assert message.startswith(f"campaign event {start.message_id} failed; retrying")
    assert "Traceback (most recent call last)" in message
    assert "in handoff" in message and "in publish" in message  # the frames, deep down
    assert message.rstrip().endswith("UpstreamError: upstream_error")

    (event,) = sentry.events()
    assert sentry.queued == []
    assert event["tags"] == {"org_id": ORG, "run_id": run_id, "agent_id": "AGT-002"}
    values = event["exception"]["values"]
    assert "handoff" in [f["function"] for v in values for f in v["stacktrace"]["frames"]]

    payload = json.loads(refused)["envelope"]
    for text in (refusing.marker, json.dumps(payload), refused.decode()):
        assert text not in out.err and text not in out.out
        assert text.encode() not in sentry.serialized()
