"""Transports against real receivers: functions-framework apps served over real HTTP.

- ``LocalTransport``: delivery, redelivery, dead-lettering into ``dead_letters`` and
  scheduled tasks, against a functions-framework CloudEvent function (it turns the Pub/Sub push
  JSON into a CloudEvent, as Cloud Functions does) and an HTTP function.
- ``GcpTransport`` (REST) against the real Pub/Sub emulator (``gcloud beta emulators pubsub
  start``, which serves the REST API too) pushing to the receiver, and against the real
  ``gcloud-tasks-emulator`` (gRPC only, so behind ``TasksGateway``, which maps Cloud Tasks'
  REST onto it with the official client) dispatching to it. The official clients create the
  emulators' topics, subscriptions and queues, as an operator's tooling would.

No test sleeps to synchronise: receivers signal a condition variable, the local transport's
``drain`` waits on one, and every wait has a deadline.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import functions_framework
import pytest
from cloudevents.http import CloudEvent
from werkzeug.serving import WSGIRequestHandler, make_server

from colony.adapters.dead_letters import DbDeadLetters, DeadLetter
from colony.adapters.google_api import GoogleApi
from colony.adapters.transport import transport_from_settings
from colony.adapters.transport_checks import queue_path, task_id_for, topic_path
from colony.adapters.transport_gcp import GcpTransport
from colony.adapters.transport_local import LocalTransport
from colony.contracts.events import CampaignResume, CampaignStart, ContentRequest
from colony.errors import ConfigError, TransportUnavailable, UpstreamError, ValidationFailed
from colony.registry.functions import CAMPAIGN_RESUME_QUEUE, CAMPAIGN_TOPIC, CONTENT_TOPIC, QUEUES
from colony.runtime.edge import decode_push
from colony.runtime.transport import enqueue, publish
from colony.settings import Settings
from colony.store.db import fetch_all
from colony.testing import emulators
from colony.testing.inline import InlineTransport
from colony.testing.loopback import closed_port
from colony.testing.tasks_gateway import TasksGateway
from colony.testing.wire import Reply, Route, WireServer
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("TECH-003", "TECH-004")

PROJECT = "colony-test"
REGION = "us-central1"
TOPIC = "colony-enrichment"  # subscribed by the "enrichment" function
QUEUE = "colony-campaign-resume"
TARGET = "campaign-resume"  # an HTTP function
WAIT = 30.0  # deadline for any one wait

_SOURCE = """
import functions_framework

HOOKS = []


@functions_framework.cloud_event
def receive_event(event):
    HOOKS[0](event)


@functions_framework.http
def receive_request(request):
    return HOOKS[0](request)
"""


@dataclass
class Hit:
    key: str  # message id (CloudEvent id) or task id
    data: bytes
    attributes: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)


class Receiver:
    """Records every delivery; ``fail(hit, nth_delivery_of_its_key)`` makes it answer 500."""

    def __init__(self, fail: Callable[[Hit, int], bool] | None = None) -> None:
        self.hits: list[Hit] = []
        self.fail = fail or (lambda hit, n: False)
        self._cond = threading.Condition()

    def record(self, hit: Hit) -> bool:
        with self._cond:
            self.hits.append(hit)
            nth = sum(1 for h in self.hits if h.key == hit.key)
            self._cond.notify_all()
        return self.fail(hit, nth)

    def wait_for(self, predicate: Callable[[list[Hit]], bool], timeout: float = WAIT) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.hits), timeout)

    def of(self, key: str) -> list[Hit]:
        with self._cond:
            return [h for h in self.hits if h.key == key]

    # -- the two function bodies --------------------------------------------------------

    def on_event(self, event: Any) -> None:
        message = event.data["message"]
        hit = Hit(
            event["id"],
            base64.b64decode(message["data"]),
            dict(message.get("attributes") or {}),
            {"type": event["type"], "source": event["source"], "message": message},
        )
        if self.record(hit):
            raise RuntimeError("this receiver was told to fail")

    def on_request(self, request: Any) -> tuple[str, int]:
        body = request.get_data()
        key = request.headers.get("X-CloudTasks-TaskName")
        if key is None:  # a raw Pub/Sub push envelope
            key = json.loads(body)["message"]["messageId"]
        if self.record(Hit(key, body, {}, {"headers": dict(request.headers)})):
            return "told to fail", 500
        return "", 204


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


@contextmanager
def serve_function(
    tmp_path: Path, kind: Literal["cloudevent", "http"], receiver: Receiver
) -> Iterator[str]:
    """A functions-framework app (from a source file, as ``functions-framework --source``
    loads it) served over HTTP on a free port in a thread; yields its URL."""
    name = f"colony_receiver_{uuid.uuid4().hex[:12]}"
    source = tmp_path / f"{name}.py"
    source.write_text(_SOURCE)
    target = "receive_event" if kind == "cloudevent" else "receive_request"
    app = functions_framework.create_app(target=target, source=str(source), signature_type=kind)
    sys.modules[name].HOOKS.append(
        receiver.on_event if kind == "cloudevent" else receiver.on_request
    )
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
        sys.modules.pop(name, None)
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))


def _payload(i: int) -> bytes:
    return json.dumps({"n": i, "text": f"message {i} ✓"}).encode()


# -- LocalTransport -------------------------------------------------------------------------


def test_local_publish_delivers_each_message_once_as_a_cloudevent(tmp_path: Path) -> None:
    receiver = Receiver()
    with (
        serve_function(tmp_path, "cloudevent", receiver) as url,
        LocalTransport({"enrichment": url}, project=PROJECT) as transport,
    ):
        sent = {
            transport.publish(TOPIC, _payload(i), {"org_id": "org_a", "n": str(i)}): i
            for i in range(25)
        }
        assert transport.drain(WAIT)
        assert transport.acked == 25 and transport.dead_letters == []
    assert len(sent) == 25  # distinct ids
    assert sorted(h.key for h in receiver.hits) == sorted(sent)  # each exactly once
    for hit in receiver.hits:
        i = sent[hit.key]
        assert hit.data == _payload(i)
        assert hit.attributes == {"org_id": "org_a", "n": str(i)}
        assert hit.meta["type"] == "google.cloud.pubsub.topic.v1.messagePublished"
        assert hit.meta["source"].startswith("//pubsub.googleapis.com/")


def test_local_publish_posts_the_pubsub_push_envelope(tmp_path: Path) -> None:
    receiver = Receiver()
    with (
        serve_function(tmp_path, "http", receiver) as url,
        LocalTransport({"enrichment": url}, project=PROJECT) as transport,
    ):
        message_id = transport.publish(TOPIC, b"\x00\xffraw", {"org_id": "org_a"})
        assert transport.drain(WAIT)
    [hit] = receiver.hits
    assert hit.meta["headers"]["Content-Type"] == "application/json"
    envelope = json.loads(hit.data)
    assert set(envelope) == {"message", "subscription", "deliveryAttempt"}
    assert envelope["subscription"] == f"projects/{PROJECT}/subscriptions/{TOPIC}-push"
    assert envelope["deliveryAttempt"] == 1
    message = envelope["message"]
    assert set(message) == {
        "data",
        "attributes",
        "messageId",
        "message_id",
        "publishTime",
        "publish_time",
    }
    assert message["messageId"] == message["message_id"] == message_id
    assert base64.b64decode(message["data"]) == b"\x00\xffraw"
    assert message["attributes"] == {"org_id": "org_a"}
    assert message["publishTime"] == message["publish_time"]
    assert message["publishTime"].endswith("Z")


def test_local_redelivers_a_nacked_message_with_the_same_id(tmp_path: Path) -> None:
    receiver = Receiver(fail=lambda hit, nth: nth <= 2)  # 500 twice, then ack
    with (
        serve_function(tmp_path, "cloudevent", receiver) as url,
        LocalTransport({"enrichment": url}, backoff=(0.01, 0.05)) as transport,
    ):
        message_id = transport.publish(TOPIC, b'{"k": 1}', {"org_id": "org_a"})
        assert transport.drain(WAIT)
        assert transport.acked == 1 and transport.dead_letters == []
    hits = receiver.of(message_id)
    assert len(hits) == 3 and len(receiver.hits) == 3
    assert all(h.data == b'{"k": 1}' and h.attributes == {"org_id": "org_a"} for h in hits)
    assert [h.meta["message"]["messageId"] for h in hits] == [message_id] * 3


def test_local_dead_letters_into_the_org_and_loses_nothing(
    tmp_path: Path, testdb: PgDB, caplog: pytest.LogCaptureFixture
) -> None:
    db = testdb.app()
    for org in ("org_a", "org_b"):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    sink = DbDeadLetters(db)
    receiver = Receiver(fail=lambda hit, nth: hit.attributes.get("poison") == "1")
    with (
        serve_function(tmp_path, "cloudevent", receiver) as url,
        LocalTransport(
            {"enrichment": url}, max_attempts=3, backoff=(0.01, 0.02), dead_letter=sink
        ) as transport,
    ):
        good = [transport.publish(TOPIC, _payload(i), {"org_id": "org_a"}) for i in range(5)]
        bad = transport.publish(TOPIC, b'{"x": 1}', {"org_id": "org_a", "poison": "1"})
        orphan = transport.publish(TOPIC, b"\xff not json", {"poison": "1"})  # no org
        with caplog.at_level(logging.ERROR, logger="colony.adapters.transport_local"):
            assert transport.drain(WAIT)
        assert transport.acked == 5
        assert {d.message_id for d in transport.dead_letters} == {bad, orphan}
    assert all(len(receiver.of(m)) == 1 for m in good)
    assert len(receiver.of(bad)) == 3 and len(receiver.of(orphan)) == 3  # max_attempts each
    with db.transaction("org_a") as cur:
        rows = fetch_all(cur, "SELECT * FROM dead_letters")
    assert len(rows) == 1
    row = rows[0]
    assert (row["org_id"], row["topic"], row["message_id"]) == ("org_a", TOPIC, bad)
    assert row["data"] == {"x": 1}
    assert row["attributes"] == {"org_id": "org_a", "poison": "1"}
    assert row["attempts"] == 3 and row["last_error"].startswith("HTTP 500")
    with db.transaction("org_b") as cur:
        assert fetch_all(cur, "SELECT * FROM dead_letters") == []
    [kept] = sink.unrecorded
    assert kept.message_id == orphan and kept.data == b"\xff not json" and kept.attempts == 3
    assert any("no org_id" in r.getMessage() and orphan in r.getMessage() for r in caplog.records)


def test_a_dead_task_is_recorded_in_the_org_its_body_names(testdb: PgDB) -> None:
    """A Cloud Task has no attributes: its body's ``org_id`` (``{"task": {"org_id"}}`` or at
    the top) says whose dead letter it is; a body naming none is kept in memory, logged."""
    db = testdb.app()
    with db.transaction("org_a") as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES ('org_a', 'A')")
    sink = DbDeadLetters(db)
    send = b'{"org_id": "org_a", "outbox_id": "m-1"}'
    lifecycle = b'{"task": {"kind": "crm.reconcile", "org_id": "org_a"}}'
    for n, body in enumerate((send, lifecycle, b'{"task": {"kind": "schedule"}}')):
        sink(DeadLetter("colony-send", f"task-{n}", body, {}, 10, "HTTP 404: not_queued"))
    with db.transaction("org_a") as cur:
        rows = fetch_all(cur, "SELECT message_id, last_error FROM dead_letters ORDER BY id")
    assert [(r["message_id"], r["last_error"]) for r in rows] == [
        ("task-0", "HTTP 404: not_queued"),
        ("task-1", "HTTP 404: not_queued"),
    ]
    assert [letter.message_id for letter in sink.unrecorded] == ["task-2"]


def test_local_dead_letters_when_the_function_is_unreachable() -> None:
    url = f"http://127.0.0.1:{closed_port()}/"  # nothing listens there
    with LocalTransport({"enrichment": url}, max_attempts=2, backoff=(0.01, 0.01)) as transport:
        message_id = transport.publish(TOPIC, b"{}", {"org_id": "org_a"})
        assert transport.drain(WAIT)
    [letter] = transport.dead_letters
    assert (letter.message_id, letter.attempts) == (message_id, 2)
    assert "refused" in letter.last_error.lower()


def test_local_schedule_delivers_once_after_the_delay(tmp_path: Path) -> None:
    receiver = Receiver()
    body = json.dumps({"org_id": "org_a", "run_id": "run-1"}).encode()
    with (
        serve_function(tmp_path, "http", receiver) as url,
        LocalTransport({TARGET: url}, project=PROJECT, region=REGION) as transport,
    ):
        start = time.monotonic()
        first = transport.schedule(QUEUE, TARGET, body, task_id="run-1/resume", delay_seconds=0.3)
        again = transport.schedule(QUEUE, TARGET, body, task_id="run-1/resume", delay_seconds=0.3)
        assert first == again
        assert first == f"{queue_path(PROJECT, REGION, QUEUE)}/tasks/{task_id_for('run-1/resume')}"
        assert transport.pending() == 1
        assert transport.drain(WAIT)
    [hit] = receiver.hits
    assert hit.key == first.rsplit("/", 1)[-1]
    assert hit.data == body
    assert hit.at - start >= 0.3
    headers = hit.meta["headers"]
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Cloudtasks-Queuename"] == QUEUE
    assert headers["X-Cloudtasks-Taskretrycount"] == "0"


def test_local_drain_does_not_wait_for_tasks_due_later_and_close_reports_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = Receiver()
    with serve_function(tmp_path, "http", receiver) as url:
        transport = LocalTransport({TARGET: url})
        name = transport.schedule(QUEUE, TARGET, b"{}", task_id="later", delay_seconds=3600)
        assert transport.drain(0.5)  # nothing due within the window
        assert transport.pending() == 1
        with caplog.at_level(logging.WARNING, logger="colony.adapters.transport_local"):
            transport.close()
    assert receiver.hits == []
    assert [d.message_id for d in transport.undelivered] == [name]
    assert any("undelivered" in r.getMessage() for r in caplog.records)


def test_local_rejects_what_it_cannot_route() -> None:
    with LocalTransport({}) as transport:
        with pytest.raises(ValidationFailed, match="unknown topic"):
            transport.publish("nope", b"{}", {})
        with pytest.raises(ConfigError, match="COLONY_FUNCTION_URLS"):
            transport.publish(TOPIC, b"{}", {"org_id": "org_a"})
        with pytest.raises(ValidationFailed, match="not HTTP-triggered"):
            transport.schedule(QUEUE, "enrichment", b"{}", task_id="t")
        with pytest.raises(ValidationFailed, match="unknown queue"):
            transport.schedule("nope", TARGET, b"{}", task_id="t")
        with pytest.raises(ValidationFailed, match="attribute"):
            transport.publish(TOPIC, b"{}", {"org_id": 1})  # type: ignore[dict-item]


# -- GcpTransport against the real emulators ------------------------------------------------


@pytest.fixture(scope="module")
def pubsub_host() -> Iterator[str]:
    try:
        with emulators.pubsub_emulator(PROJECT) as host:
            yield host
    except emulators.EmulatorUnavailable as missing:
        pytest.skip(
            f"Pub/Sub emulator NOT run: {missing}. The same publish scenario runs on "
            "LocalTransport in test_local_publish_delivers_each_message_once_as_a_cloudevent."
        )


@pytest.fixture(scope="module")
def tasks_host() -> Iterator[str]:
    try:
        with emulators.tasks_emulator(max_retries=3) as host:
            yield host
    except emulators.EmulatorUnavailable as missing:
        pytest.skip(
            f"Cloud Tasks emulator NOT run: {missing}. The schedule scenario runs on "
            "LocalTransport in test_local_schedule_delivers_once_after_the_delay."
        )


def test_gcp_publish_through_the_pubsub_emulator_reaches_the_function(
    pubsub_host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.cloud import pubsub_v1

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", pubsub_host)
    receiver = Receiver()
    with serve_function(tmp_path, "cloudevent", receiver) as url:
        publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
        try:
            topic = topic_path(PROJECT, TOPIC)
            publisher.create_topic(name=topic)
            subscriber.create_subscription(
                name=f"projects/{PROJECT}/subscriptions/{TOPIC}-push",
                topic=topic,
                push_config={"push_endpoint": url},
            )
        finally:
            publisher.transport.close()
            subscriber.close()
        with GcpTransport(
            PROJECT,
            REGION,
            function_urls={"enrichment": url},
            pubsub_endpoint=f"http://{pubsub_host}",
        ) as transport:
            sent = {
                transport.publish(TOPIC, _payload(i), {"org_id": "org_a", "n": str(i)}): i
                for i in range(3)
            }
        assert receiver.wait_for(lambda hits: {h.key for h in hits} >= set(sent))
    assert len(sent) == 3
    for message_id, i in sent.items():
        hit = receiver.of(message_id)[0]  # push is at-least-once; the emulator sent it once
        assert hit.data == _payload(i)
        assert hit.attributes == {"org_id": "org_a", "n": str(i)}
        assert hit.meta["type"] == "google.cloud.pubsub.topic.v1.messagePublished"


def test_gcp_schedule_through_the_tasks_emulator_reaches_the_function(
    tasks_host: str, tmp_path: Path
) -> None:
    import grpc
    from google.cloud import tasks_v2
    from google.cloud.tasks_v2.services.cloud_tasks.transports import CloudTasksGrpcTransport

    receiver = Receiver()
    admin = tasks_v2.CloudTasksClient(
        transport=CloudTasksGrpcTransport(channel=grpc.insecure_channel(tasks_host))
    )
    body = json.dumps({"org_id": "org_a", "run_id": "run-7"}).encode()
    try:
        admin.create_queue(
            parent=f"projects/{PROJECT}/locations/{REGION}",
            queue={"name": queue_path(PROJECT, REGION, QUEUE)},
        )
        with (
            serve_function(tmp_path, "http", receiver) as url,
            TasksGateway(tasks_host) as gateway,
            GcpTransport(
                PROJECT,
                REGION,
                function_urls={TARGET: url},
                invoker_service_account="invoker@colony-test.iam.gserviceaccount.com",
                tasks_endpoint=gateway.base_url,
            ) as transport,
        ):
            start = time.monotonic()
            first = transport.schedule(QUEUE, TARGET, body, task_id="run-7/resume", delay_seconds=1)
            again = transport.schedule(QUEUE, TARGET, body, task_id="run-7/resume", delay_seconds=1)
            # Due after the task above, in the same queue: once it has arrived, any second copy
            # of the first task would have arrived too.
            sentinel = transport.schedule(QUEUE, TARGET, b"{}", task_id="sentinel", delay_seconds=2)
            assert receiver.wait_for(lambda hits: any(h.key == "sentinel" for h in hits))
    finally:
        admin.transport.close()
    assert (
        first
        == again
        == f"{queue_path(PROJECT, REGION, QUEUE)}/tasks/{task_id_for('run-7/resume')}"
    )
    assert sentinel.endswith("/tasks/sentinel")
    [hit] = receiver.of(task_id_for("run-7/resume"))
    assert hit.data == body
    assert hit.at - start >= 1.0
    assert hit.meta["headers"]["Content-Type"] == "application/json"
    # two creates reached the emulator: the task and the sentinel (this instance knew it had
    # created the repeated one; a second instance is refused by the name, tests/conformance)
    creates = gateway.requests_to("cloudtasks.create")
    assert len(creates) == 2 and gateway.handler_errors == []


# -- GcpTransport request shape and error mapping (REST stand-ins: no emulator needed) -----


def _create_route(reply: Reply) -> Route:
    return Route.of(
        "cloudtasks.create",
        "POST",
        r"/v2/(?P<parent>projects/.+/queues/[^/]+)/tasks",
        lambda r: reply,
    )


def _publish_route() -> Route:
    return Route.of(
        "pubsub.publish",
        "POST",
        r"/v1/projects/(?P<project>[^/]+)/topics/(?P<topic>[^/:]+):publish",
        lambda r: Reply(200, {"messageIds": ["m-1"]}),
    )


def _transport(server: WireServer, **kwargs: Any) -> GcpTransport:
    fast = {"sleep": lambda seconds: None, "timeout": 5.0}
    return GcpTransport(
        PROJECT,
        REGION,
        pubsub=GoogleApi("pubsub", server.base_url, **fast),
        tasks=GoogleApi("cloudtasks", server.base_url, **fast),
        **kwargs,
    )


def test_gcp_schedule_builds_an_oidc_http_task_and_treats_already_exists_as_done() -> None:
    exists = Reply(409, {"error": {"code": 409, "message": "exists", "status": "ALREADY_EXISTS"}})
    with WireServer(routes=[_create_route(exists)]) as server:
        transport = _transport(
            server,
            function_urls={TARGET: "https://resume.example/"},
            invoker_service_account="invoker@p.iam.gserviceaccount.com",
        )
        before = datetime.now(UTC)
        name = transport.schedule(QUEUE, TARGET, b'{"a": 1}', task_id="run:1", delay_seconds=5)
        assert name == f"{queue_path(PROJECT, REGION, QUEUE)}/tasks/{task_id_for('run:1')}"
        [call] = server.requests_to("cloudtasks.create")
        assert call.params["parent"] == queue_path(PROJECT, REGION, QUEUE)
        task = call.body["task"]
        assert task["name"] == name
        assert task["httpRequest"] == {
            "httpMethod": "POST",
            "url": "https://resume.example/",
            "headers": {"Content-Type": "application/json"},
            "body": base64.b64encode(b'{"a": 1}').decode(),
            "oidcToken": {
                "serviceAccountEmail": "invoker@p.iam.gserviceaccount.com",
                "audience": "https://resume.example/",
            },
        }
        due = datetime.fromisoformat(task["scheduleTime"].replace("Z", "+00:00"))
        assert timedelta(seconds=4) < due - before < timedelta(seconds=6)
        assert task["scheduleTime"].endswith("Z")
        assert transport.schedule(QUEUE, TARGET, b"{}", task_id="run:1") == name
        assert len(server.requests_to("cloudtasks.create")) == 1  # it knows it created it
        assert call.header("Authorization") is None  # a local endpoint gets no credentials


def test_gcp_publish_sends_base64_data_and_string_attributes() -> None:
    with WireServer(routes=[_publish_route()]) as server:
        transport = _transport(server, function_urls={})
        assert transport.publish(TOPIC, b"\x00\xffdata", {"org_id": "org_a"}) == "m-1"
        [call] = server.requests_to("pubsub.publish")
    assert call.params == {"project": PROJECT, "topic": TOPIC}
    assert call.body == {
        "messages": [
            {"data": base64.b64encode(b"\x00\xffdata").decode(), "attributes": {"org_id": "org_a"}}
        ]
    }


def test_gcp_maps_transient_and_permanent_failures() -> None:
    urls = {TARGET: "https://r.example/"}
    with WireServer(routes=[_publish_route(), _create_route(Reply(200, {}))]) as server:
        transport = _transport(server, function_urls=urls)
        server.fail(503, times=2)  # retried inside the client: the third attempt succeeds
        assert transport.publish(TOPIC, b"{}", {"org_id": "org_a"}) == "m-1"
        assert len(server.requests_to("pubsub.publish")) == 3
        server.fail(503, times=3)
        with pytest.raises(TransportUnavailable, match="503"):
            transport.publish(TOPIC, b"{}", {"org_id": "org_a"})
        server.fail(403, message="Permission denied on topic")
        with pytest.raises(UpstreamError, match="PERMISSION_DENIED") as caught:
            transport.publish(TOPIC, b"{}", {"org_id": "org_a"})
        assert not isinstance(caught.value, TransportUnavailable)
        server.fail(429, times=3)
        with pytest.raises(TransportUnavailable):
            transport.schedule(QUEUE, TARGET, b"{}", task_id="t")
        with pytest.raises(ValidationFailed, match="unknown topic"):
            transport.publish("not-a-topic", b"{}", {})
        assert server.pending == 0
    nobody = GcpTransport(
        PROJECT,
        REGION,
        function_urls=urls,
        pubsub=GoogleApi("pubsub", f"http://127.0.0.1:{closed_port()}", sleep=lambda s: None),
    )
    with pytest.raises(TransportUnavailable, match="no answer"):
        nobody.publish(TOPIC, b"{}", {})


def test_task_ids_are_sanitized_deterministically() -> None:
    assert task_id_for("run-1_resume") == "run-1_resume"
    colon, slash = task_id_for("run:1"), task_id_for("run/1")
    assert colon != slash and colon == task_id_for("run:1")
    for value in (colon, slash, task_id_for("x" * 900 + "/"), task_id_for("ünï cödé")):
        assert len(value) <= 500 and all(c.isascii() and (c.isalnum() or c in "-_") for c in value)
    with pytest.raises(ValidationFailed):
        task_id_for("")


def test_transport_from_settings_picks_the_adapter() -> None:
    urls = '{"enrichment": "http://127.0.0.1:1/"}'
    gcp = transport_from_settings(
        Settings.from_env({"COLONY_TRANSPORT": "gcp", "COLONY_FUNCTION_URLS": urls})
    )
    assert isinstance(gcp, GcpTransport) and gcp.function_urls == {
        "enrichment": "http://127.0.0.1:1/"
    }
    assert gcp.pubsub.base_url == "https://pubsub.googleapis.com"
    gcp.close()  # opened no session: nothing to close
    emulated = transport_from_settings(
        Settings.from_env(
            {
                "COLONY_TRANSPORT": "gcp",
                "PUBSUB_EMULATOR_HOST": "127.0.0.1:8085",
                "COLONY_TASKS_ENDPOINT": "http://127.0.0.1:8123",
            }
        )
    )
    assert isinstance(emulated, GcpTransport)
    assert emulated.pubsub.base_url == "http://127.0.0.1:8085"
    assert emulated.tasks.base_url == "http://127.0.0.1:8123"
    local = transport_from_settings(Settings.from_env({"COLONY_FUNCTION_URLS": urls}))
    assert isinstance(local, LocalTransport) and local.dead_letter is None
    local.close()


def test_dead_letter_without_an_org_is_kept_not_dropped(testdb: PgDB) -> None:
    sink = DbDeadLetters(testdb.app())
    letter = DeadLetter(TOPIC, "m-1", b"{}", {}, 5, "HTTP 500")
    sink(letter)
    assert sink.unrecorded == [letter]
    unknown_org = DeadLetter(TOPIC, "m-2", b"{}", {"org_id": "org_missing"}, 5, "HTTP 500")
    sink(unknown_org)  # the FK refuses it: logged and kept
    assert sink.unrecorded == [letter, unknown_org]


# -- colony.runtime.transport: what every flow publishes and schedules through -------------


def test_publish_sends_the_events_compact_json_with_its_org_and_kind() -> None:
    transport = InlineTransport()
    event = CampaignStart(org_id="org_a", campaign_id="cmp-1", run_id="run-1")
    assert publish(transport, CAMPAIGN_TOPIC, event) == "msg-1"
    [sent] = transport.pending
    assert sent.topic == CAMPAIGN_TOPIC
    assert sent.data == (
        b'{"kind":"campaign.start","org_id":"org_a","campaign_id":"cmp-1","run_id":"run-1"}'
    )
    assert sent.attributes == {"org_id": "org_a", "kind": "campaign.start"}


def test_a_published_event_reaches_its_function_and_decodes_at_the_edge(tmp_path: Path) -> None:
    receiver = Receiver()
    event = ContentRequest(org_id="org_a", request_id="content-1", topic="ROI", format="one_pager")
    with (
        serve_function(tmp_path, "cloudevent", receiver) as url,
        LocalTransport({"content": url}, project=PROJECT) as transport,
    ):
        message_id = publish(transport, CONTENT_TOPIC, event)
        assert transport.drain(WAIT)
    [hit] = receiver.hits
    attributes = {"id": hit.key, "source": hit.meta["source"], "type": hit.meta["type"]}
    decoded = decode_push(CloudEvent(attributes, {"message": hit.meta["message"]}))
    assert decoded.problem is None  # the attributes' org agrees with the event's
    assert (decoded.event_id, decoded.payload) == (message_id, event)


def test_enqueue_calls_the_queues_registered_target_with_the_events_json(
    tmp_path: Path,
) -> None:
    receiver = Receiver()
    resume = CampaignResume(org_id="org_a", campaign_id="cmp-1")
    target = QUEUES[CAMPAIGN_RESUME_QUEUE].target
    with (
        serve_function(tmp_path, "http", receiver) as url,
        LocalTransport({target: url}, project=PROJECT, region=REGION) as transport,
    ):
        name = enqueue(
            transport, CAMPAIGN_RESUME_QUEUE, resume, task_id="resume-cmp-1-7", delay_seconds=0
        )
        assert name == f"{queue_path(PROJECT, REGION, CAMPAIGN_RESUME_QUEUE)}/tasks/resume-cmp-1-7"
        assert transport.drain(WAIT)
    [hit] = receiver.hits
    assert hit.key == "resume-cmp-1-7"
    assert hit.data == (
        b'{"kind": "campaign.resume", "org_id": "org_a", "campaign_id": "cmp-1", "run_id": null}'
    )
    assert hit.meta["headers"]["X-Cloudtasks-Queuename"] == CAMPAIGN_RESUME_QUEUE
