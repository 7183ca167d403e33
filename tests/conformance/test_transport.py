"""The ``Transport`` port's conformance suite: one set of tests, three implementations.

- ``inline``: ``colony.testing.inline.InlineTransport``, the in-memory fake the flow tests
  use. "Delivered" means queued in ``pending`` for ``run_until_idle`` (published messages)
  or held in ``tasks`` (scheduled tasks): that is what its callers read.
- ``local``: ``LocalTransport``, POSTing Pub/Sub push envelopes and Cloud Tasks requests to
  functions-framework apps served over real HTTP on 127.0.0.1.
- ``gcp``: ``GcpTransport`` over REST against the real Pub/Sub emulator (pushing to the same
  CloudEvent function) and the real ``gcloud-tasks-emulator`` behind
  ``colony.testing.tasks_gateway`` (dispatching to the same HTTP function). Production's
  Pub/Sub and Cloud Tasks are stood in by Google's own emulators because the tests run
  offline; a missing emulator FAILS this suite rather than skipping it.

What every implementation must do (the Protocol's docstring and what flows rely on): refuse
an unknown topic, a bad attribute or non-bytes data; deliver a published message to its
subscriber with its data, attributes and the id ``publish`` returned; name a task
``projects/…/queues/<queue>/tasks/<task id>`` and create it once however often it is
scheduled; refuse an unknown queue, an unknown or non-HTTP target and a negative delay.

No sleeps: the receivers signal a condition variable and every wait has a deadline.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from colony.adapters.transport_checks import queue_path, task_id_for, topic_path
from colony.adapters.transport_gcp import GcpTransport
from colony.adapters.transport_local import LocalTransport
from colony.errors import ValidationFailed
from colony.ports import Transport
from colony.registry.functions import QUEUES
from colony.testing import emulators
from colony.testing.inline import InlineTransport
from colony.testing.tasks_gateway import TasksGateway
from tests.conformance.exercise import exercised
from tests.test_transport import Hit, Receiver, serve_function

PROJECT = "colony-test"
REGION = "us-central1"
TOPIC = "colony-enrichment"  # subscribed by the CloudEvent function "enrichment"
SUBSCRIBER = "enrichment"
QUEUE = "colony-campaign-resume"
TARGET = QUEUES[QUEUE].target  # an HTTP function
WAIT = 30.0


@dataclass
class Functions:
    """The two receiving functions, served once for the module (tests use unique ids)."""

    events: Receiver
    events_url: str
    requests: Receiver
    requests_url: str

    @property
    def urls(self) -> dict[str, str]:
        return {SUBSCRIBER: self.events_url, TARGET: self.requests_url}


@pytest.fixture(scope="module")
def functions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Functions]:
    events, requests = Receiver(), Receiver()
    folder: Path = tmp_path_factory.mktemp("transport-functions")
    with (
        serve_function(folder, "cloudevent", events) as events_url,
        serve_function(folder, "http", requests) as requests_url,
    ):
        yield Functions(events, events_url, requests, requests_url)


class Harness:
    """One implementation, and how to observe what it delivered."""

    transport: Transport
    project: str
    region: str

    def messages(self, ids: list[str]) -> dict[str, Hit]:
        """The delivery of each of ``ids`` (waiting, with a deadline, for every one)."""
        raise NotImplementedError

    def task_deliveries(self, name: str) -> list[Hit]:
        """Every delivery of task ``name`` once all it will ever get has happened."""
        raise NotImplementedError


class InlineHarness(Harness):
    def __init__(self) -> None:
        self.inline = InlineTransport(project=PROJECT, region=REGION)
        self.transport, self.project, self.region = self.inline, PROJECT, REGION

    def messages(self, ids: list[str]) -> dict[str, Hit]:
        queued = {m.message_id: m for m in self.inline.pending if m.topic == TOPIC}
        return {i: Hit(i, queued[i].data, dict(queued[i].attributes)) for i in ids if i in queued}

    def task_deliveries(self, name: str) -> list[Hit]:
        task = self.inline.tasks.get(name)
        return [] if task is None else [Hit(task.task_id, task.body)]


class ServedHarness(Harness):
    """Local and GCP: deliveries are what the served functions received."""

    def __init__(self, transport: Transport, functions: Functions) -> None:
        self.transport, self.functions = transport, functions
        self.project, self.region = PROJECT, REGION

    def messages(self, ids: list[str]) -> dict[str, Hit]:
        events = self.functions.events
        events.wait_for(lambda hits: {h.key for h in hits} >= set(ids))
        return {i: events.of(i)[0] for i in ids if events.of(i)}

    def settle(self) -> None:
        raise NotImplementedError

    def task_deliveries(self, name: str) -> list[Hit]:
        self.settle()
        return self.functions.requests.of(name.rsplit("/", 1)[-1])


class LocalHarness(ServedHarness):
    def settle(self) -> None:
        assert isinstance(self.transport, LocalTransport)
        assert self.transport.drain(WAIT)  # everything due is acked (or dead-lettered)


class GcpHarness(ServedHarness):
    def settle(self) -> None:
        # A sentinel due after everything scheduled before it, in the same queue: once it has
        # arrived, any second copy of an earlier task would have arrived too.
        sentinel = self.transport.schedule(
            QUEUE, TARGET, b"{}", task_id=f"sentinel-{uuid.uuid4().hex}", delay_seconds=1.0
        )
        key = sentinel.rsplit("/", 1)[-1]
        assert self.functions.requests.wait_for(lambda hits: any(h.key == key for h in hits))


@dataclass
class GcpEmulators:
    pubsub_host: str
    gateway: TasksGateway


@pytest.fixture(scope="module")
def gcp(functions: Functions) -> Iterator[GcpEmulators]:
    """The Pub/Sub and Cloud Tasks emulators, with the topic, its push subscription and the
    queue created by the official clients (as an operator's tooling would)."""
    import grpc
    from google.cloud import pubsub_v1, tasks_v2
    from google.cloud.tasks_v2.services.cloud_tasks.transports import CloudTasksGrpcTransport

    try:
        pubsub = emulators.pubsub_emulator(PROJECT)
        tasks = emulators.tasks_emulator(max_retries=3)
        with pubsub as pubsub_host, tasks as tasks_host:
            mp = pytest.MonkeyPatch()
            mp.setenv("PUBSUB_EMULATOR_HOST", pubsub_host)
            publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
            admin = tasks_v2.CloudTasksClient(
                transport=CloudTasksGrpcTransport(channel=grpc.insecure_channel(tasks_host))
            )
            try:
                topic = topic_path(PROJECT, TOPIC)
                publisher.create_topic(name=topic)
                subscriber.create_subscription(
                    name=f"projects/{PROJECT}/subscriptions/{TOPIC}-push",
                    topic=topic,
                    push_config={"push_endpoint": functions.events_url},
                )
                admin.create_queue(
                    parent=f"projects/{PROJECT}/locations/{REGION}",
                    queue={"name": queue_path(PROJECT, REGION, QUEUE)},
                )
            finally:
                publisher.transport.close()
                subscriber.close()
                admin.transport.close()
                mp.undo()
            with TasksGateway(tasks_host) as gateway:
                yield GcpEmulators(pubsub_host, gateway)
                assert gateway.handler_errors == []
    except emulators.EmulatorUnavailable as missing:  # a broken path must not pass as skipped
        pytest.fail(f"the GCP transport's emulators are needed here: {missing}")


@pytest.fixture(params=["inline", "local", "gcp"])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    if request.param == "inline":
        yield InlineHarness()
        return
    functions: Functions = request.getfixturevalue("functions")
    if request.param == "local":
        with LocalTransport(functions.urls, project=PROJECT, region=REGION) as local:
            yield LocalHarness(local, functions)
        return
    world: GcpEmulators = request.getfixturevalue("gcp")
    with GcpTransport(
        PROJECT,
        REGION,
        function_urls=functions.urls,
        pubsub_endpoint=f"http://{world.pubsub_host}",
        tasks_endpoint=world.gateway.base_url,
    ) as transport:
        yield GcpHarness(transport, functions)


# -- publish --------------------------------------------------------------------------------


def test_it_is_a_transport(harness: Harness) -> None:
    """Both methods: a message published reaches its subscriber, a task scheduled its target."""
    run = uuid.uuid4().hex
    data, body = f'{{"run": "{run}"}}'.encode(), f'{{"task": "{run}"}}'.encode()
    with exercised(Transport, harness.transport) as transport:
        message_id = transport.publish(TOPIC, data, {"org_id": "org_a"})
        task = transport.schedule(QUEUE, TARGET, body, task_id=f"it-{run}")
    delivered = harness.messages([message_id])[message_id]
    assert (delivered.data, delivered.attributes) == (data, {"org_id": "org_a"})
    assert task == f"{queue_path(harness.project, harness.region, QUEUE)}/tasks/it-{run}"
    assert [h.data for h in harness.task_deliveries(task)] == [body]


def test_a_published_message_reaches_its_subscriber_intact(harness: Harness) -> None:
    run = uuid.uuid4().hex
    payloads = {
        n: f'{{"n": {n}, "run": "{run}", "text": "message ✓"}}'.encode() + b"\x00\xff"
        for n in range(3)
    }
    sent = {
        harness.transport.publish(TOPIC, data, {"org_id": "org_a", "n": str(n)}): n
        for n, data in payloads.items()
    }
    assert len(sent) == 3 and all(isinstance(i, str) and i for i in sent)  # distinct ids
    delivered = harness.messages(list(sent))
    assert set(delivered) == set(sent)
    for message_id, n in sent.items():
        assert delivered[message_id].data == payloads[n]
        assert delivered[message_id].attributes == {"org_id": "org_a", "n": str(n)}


def test_a_message_without_attributes_arrives_with_none(harness: Harness) -> None:
    data = f'{{"run": "{uuid.uuid4().hex}"}}'.encode()
    message_id = harness.transport.publish(TOPIC, data, {})
    delivered = harness.messages([message_id])[message_id]
    assert (delivered.data, delivered.attributes) == (data, {})


@pytest.mark.parametrize(
    ("topic", "data", "attributes", "match"),
    [
        ("colony-no-such-topic", b"{}", {"org_id": "org_a"}, "unknown topic"),
        (TOPIC, b"{}", {"org_id": 1}, "attribute"),
        (TOPIC, b"{}", {"": "x"}, "attribute"),
        (TOPIC, b"{}", {"googclient_x": "x"}, "attribute"),
        (TOPIC, "not bytes", {"org_id": "org_a"}, "bytes"),
    ],
    ids=["unknown-topic", "non-string-value", "empty-key", "goog-prefix", "str-data"],
)
def test_publish_refuses_what_pubsub_would(
    harness: Harness, topic: str, data: Any, attributes: Any, match: str
) -> None:
    with pytest.raises(ValidationFailed, match=match):
        harness.transport.publish(topic, data, attributes)


# -- schedule -------------------------------------------------------------------------------


def test_a_task_is_named_by_its_queue_and_id_and_created_once(harness: Harness) -> None:
    task_id = f"run:{uuid.uuid4().hex}/resume"  # not a valid Cloud Tasks id as it stands
    body = b'{"org_id": "org_a", "campaign_id": "cmp-1"}'
    first = harness.transport.schedule(QUEUE, TARGET, body, task_id=task_id, delay_seconds=0.2)
    again = harness.transport.schedule(QUEUE, TARGET, body, task_id=task_id, delay_seconds=0.2)
    expected = f"{queue_path(harness.project, harness.region, QUEUE)}/tasks/{task_id_for(task_id)}"
    assert first == again == expected
    [delivered] = harness.task_deliveries(first)
    assert delivered.data == body


def test_tasks_with_different_ids_are_different_tasks(harness: Harness) -> None:
    run = uuid.uuid4().hex
    a = harness.transport.schedule(QUEUE, TARGET, b'{"t": "a"}', task_id=f"{run}:a")
    b = harness.transport.schedule(QUEUE, TARGET, b'{"t": "b"}', task_id=f"{run}/a")
    assert a != b  # ids differing only in characters Cloud Tasks does not allow
    assert [h.data for h in harness.task_deliveries(a)] == [b'{"t": "a"}']
    assert [h.data for h in harness.task_deliveries(b)] == [b'{"t": "b"}']


@pytest.mark.parametrize(
    ("queue", "target", "body", "delay", "match"),
    [
        ("colony-no-such-queue", TARGET, b"{}", 0.0, "unknown queue"),
        (QUEUE, "no-such-function", b"{}", 0.0, "unknown function"),
        (QUEUE, SUBSCRIBER, b"{}", 0.0, "not HTTP-triggered"),
        (QUEUE, TARGET, "not bytes", 0.0, "bytes"),
        (QUEUE, TARGET, b"{}", -1.0, "delay_seconds"),
    ],
    ids=["unknown-queue", "unknown-target", "pubsub-target", "str-body", "negative-delay"],
)
def test_schedule_refuses_what_cannot_be_delivered(
    harness: Harness, queue: str, target: str, body: Any, delay: float, match: str
) -> None:
    with pytest.raises(ValidationFailed, match=match):
        harness.transport.schedule(queue, target, body, task_id="t-1", delay_seconds=delay)


@pytest.mark.parametrize("task_id", ["", None])
def test_schedule_needs_a_task_id(harness: Harness, task_id: Any) -> None:
    with pytest.raises(ValidationFailed, match="task_id"):
        harness.transport.schedule(QUEUE, TARGET, b"{}", task_id=task_id)


def test_a_task_named_by_two_gcp_instances_is_created_once(
    functions: Functions, gcp: GcpEmulators
) -> None:
    """Two function instances scheduling the same logical task (a redelivered event handled
    twice): Cloud Tasks refuses the second name, and the transport counts that as done.
    Only ``gcp`` shares state between instances: an ``InlineTransport`` or a
    ``LocalTransport`` is one process's queue, and the local stack runs one of each."""
    instances = [
        GcpTransport(
            PROJECT,
            REGION,
            function_urls=functions.urls,
            pubsub_endpoint=f"http://{gcp.pubsub_host}",
            tasks_endpoint=gcp.gateway.base_url,
        )
        for _ in range(2)
    ]
    task_id = f"twice-{uuid.uuid4().hex}"
    try:
        names = {
            t.schedule(QUEUE, TARGET, b'{"n": 1}', task_id=task_id, delay_seconds=0.2)
            for t in instances
        }
        [name] = names
        [delivered] = GcpHarness(instances[0], functions).task_deliveries(name)
    finally:
        for t in instances:
            t.close()
    assert delivered.data == b'{"n": 1}'
    creates = [r for r in gcp.gateway.requests_to("cloudtasks.create") if task_id in str(r.body)]
    assert len(creates) == 2  # the second instance did ask; it was told ALREADY_EXISTS
