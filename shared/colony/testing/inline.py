"""An in-process transport and flow deps: the campaign chain without HTTP, for fast flow
tests and benchmarks. Delivery semantics mirror Pub/Sub's: at least once (``duplicates``
delivers every message that many times), a failing delivery is retried up to
``max_attempts`` and then dead-lettered, a caller error is rejected (acked, not retried).
The end-to-end tests drive the same flows through real functions-framework servers.

``local_deps`` is production's ``colony.runtime.deps.Deps`` (through ``build_deps``) over
given parts, on a fixed clock: tests exercise the object the functions use.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from colony.adapters.transport_checks import (
    check_attributes,
    check_data,
    check_task,
    check_topic,
    task_name,
)
from colony.contracts.events import EVENT_ADAPTER
from colony.errors import CallerError, InternalError, UpstreamError
from colony.flows.deps import FlowDeps
from colony.flows.handlers import PUBSUB_HANDLERS
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import LlmDeps
from colony.ports import (
    BlobStore,
    Clock,
    MailboxApis,
    ReceivedMail,
    SecretStore,
    Sender,
    Transport,
    WebFetcher,
)
from colony.ports.render import PageRenderer
from colony.registry.functions import FUNCTIONS
from colony.runtime import delivery
from colony.runtime.appliers import applier
from colony.runtime.deps import Deps, build_deps
from colony.runtime.faults import Faults
from colony.settings import Settings
from colony.store import Database

TOPIC_FUNCTIONS = {f.topic: f.name for f in FUNCTIONS.values() if f.topic}


@dataclass(frozen=True)
class Sent:
    topic: str
    data: bytes
    attributes: Mapping[str, str]
    message_id: str


@dataclass(frozen=True)
class Task:
    queue: str
    target: str
    body: bytes
    task_id: str
    delay_seconds: float


class InlineTransport:
    """``colony.ports.Transport`` in memory: ``pending`` holds published messages for
    ``run_until_idle``, ``tasks`` the scheduled tasks by full task name (created once).

    It refuses what the real transports refuse (unknown topic, queue or target, bad
    attributes, non-bytes data, a negative delay) and names tasks as they do; the Transport
    conformance suite (``tests/conformance/test_transport.py``) holds it to that.
    """

    def __init__(self, *, project: str = "colony-local", region: str = "us-central1") -> None:
        self.project, self.region = project, region
        self.pending: deque[Sent] = deque()
        self.tasks: dict[str, Task] = {}
        self.published = 0
        self._ids = itertools.count(1)

    def publish(self, topic: str, data: bytes, attributes: Mapping[str, str]) -> str:
        check_topic(topic)
        payload, attrs = check_data(data), check_attributes(attributes)
        message = Sent(topic, payload, attrs, f"msg-{next(self._ids)}")
        self.pending.append(message)
        self.published += 1
        return message.message_id

    def schedule(
        self, queue: str, target: str, body: bytes, *, task_id: str, delay_seconds: float = 0.0
    ) -> str:
        payload = check_task(queue, target, body, delay_seconds)
        name = task_name(self.project, self.region, queue, task_id)
        self.tasks.setdefault(name, Task(queue, target, payload, task_id, delay_seconds))
        return name


@dataclass
class Delivery:
    delivered: int = 0
    retried: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)
    dead_letters: list[Sent] = field(default_factory=list)


def run_until_idle(
    deps: FlowDeps, transport: InlineTransport, *, duplicates: int = 1, max_attempts: int = 5
) -> Delivery:
    """Deliver every published message (and what its handlers publish) until none is left."""
    stats = Delivery()
    while transport.pending:
        message = transport.pending.popleft()
        handler = PUBSUB_HANDLERS[TOPIC_FUNCTIONS[message.topic]]
        event = EVENT_ADAPTER.validate_json(message.data)
        for _ in range(duplicates):
            for attempt in range(1, max_attempts + 1):
                try:
                    with delivery.attempt(attempt, max_attempts):  # as Pub/Sub push tells it
                        handler(deps, event, message.message_id)
                    stats.delivered += 1
                    break
                except CallerError as error:
                    stats.rejected.append((message.message_id, error.code))
                    break
                except (UpstreamError, InternalError):  # as the edge: 5xx, redelivered
                    stats.retried += 1
                    if attempt == max_attempts:
                        stats.dead_letters.append(message)
    return stats


FIXED_NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # a Monday


def fixed_clock() -> datetime:
    """The tests' ``Clock``: always ``FIXED_NOW``."""
    return FIXED_NOW


def local_deps(
    settings: Settings,
    db: Database,
    transport: Transport,
    llm: LlmDeps | None = None,
    knowledge: KnowledgeStore | None = None,
    *,
    blobs: BlobStore | None = None,
    sender: Sender | None = None,
    secrets: SecretStore | None = None,
    mailbox_apis: MailboxApis | None = None,
    inbound: ReceivedMail | None = None,
    web: WebFetcher | None = None,
    renderer: PageRenderer | None = None,
    faults: Faults | None = None,
    clock: Clock = fixed_clock,
) -> Deps:
    """The ``Deps`` production builds (``build_deps``), over these parts, for tests and
    benchmarks.

    Unlike production it runs on ``fixed_clock`` and injects no faults unless given them
    (``COLONY_INJECT_FAULTS`` is not read). Rejections are recorded in ``db``, as in
    production. A part left out (``llm``, ``knowledge``, ``blobs``, ``sender``, ``secrets``,
    ``web``) raises
    ``ConfigError`` on use, naming it; no ``renderer`` is none (pages that need a browser are
    recorded, not rendered). ``Deps`` is frozen: change a part with
    ``dataclasses.replace``.
    """
    return build_deps(
        settings,
        db=db,
        transport=transport,
        llm=llm,
        knowledge=knowledge,
        blobs=blobs,
        sender=sender,
        secrets=secrets,
        mailbox_apis=mailbox_apis,
        inbound=inbound,
        web=web,
        renderer=renderer,
        appliers=applier,  # the real table: the tests decide items of every kind
        clock=clock,
        faults=faults if faults is not None else Faults(),
    )
