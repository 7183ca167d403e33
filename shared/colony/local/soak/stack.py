"""The local stack the soak runs on, built as ``make run`` builds it, with its stand-ins set
to fail: every function served (``FunctionServers``) and restarted when killed
(``Supervisor``); their Pub/Sub and Cloud Tasks the ``GcpQueues`` stand-in in this process
(so a killed function loses nothing it published), delivering with the deployed retry
policies (Pub/Sub's 10 s to 600 s back-off and 5 delivery attempts, Cloud Tasks' 5 s to 80 s
and the send queue's 10 attempts), duplicating a share of the pushes and dispatching tasks
late; the model the ``ChaosModelServer``; mail the ``SmtpServer`` deferring a share."""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from colony.adapters.dead_letters import DbDeadLetters
from colony.adapters.transport_gcp import GcpTransport
from colony.local.campaign_demo import function_env
from colony.local.functions import FunctionServers
from colony.local.supervisor import Supervisor
from colony.settings import Settings
from colony.store import Database
from colony.testing.chaos_model import ChaosModelServer
from colony.testing.gcp_queues import GcpQueues
from colony.testing.smtp_server import SmtpServer

MAIL_FROM = "Soak <outreach@soak.example>"


@dataclass(frozen=True, slots=True)
class Faults:
    """What the stand-ins inject (rates are shares of calls, pushes, recipients, tasks)."""

    seed: int = 38
    model_rate: float = 0.10
    model_hang_s: float = 20.0
    smtp_defer_rate: float = 0.05
    push_duplicate_rate: float = 0.10
    task_delay_max_s: float = 5.0


@dataclass
class Counted:
    """A seeded draw that counts what it decided (so the report counts real faults)."""

    rng: random.Random
    hits: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def chance(self, rate: float) -> Callable[[], bool]:
        def draw() -> bool:
            with self.lock:
                hit = self.rng.random() < rate
                self.hits += hit
                return hit

        return draw

    def delay(self, most: float) -> Callable[[], float]:
        def draw() -> float:
            with self.lock:
                seconds = self.rng.uniform(0.0, most)
                self.hits += seconds > 0
                return seconds

        return draw


@dataclass
class Stack:
    settings: Settings
    db: Database
    servers: FunctionServers
    supervisor: Supervisor
    queues: GcpQueues
    model: ChaosModelServer
    smtp: SmtpServer
    transport: GcpTransport  # this process's own, for what the soak publishes
    duplicated: Counted
    delayed: Counted


@contextmanager
def soak_stack(
    settings: Settings,
    db: Database,
    faults: Faults,
    say: Callable[[str], None],
    *,
    push_backoff: tuple[float, float] = (10.0, 600.0),
    task_backoff: tuple[float, float] = (5.0, 80.0),
    extra_env: dict[str, str] | None = None,
) -> Iterator[Stack]:
    app_dsn = settings.db_dsn or ""
    duplicated = Counted(random.Random(f"{faults.seed}:push"))
    delayed = Counted(random.Random(f"{faults.seed}:task"))
    with ExitStack() as stack:
        model = stack.enter_context(
            ChaosModelServer(rate=faults.model_rate, seed=faults.seed, hang_s=faults.model_hang_s)
        )
        smtp = stack.enter_context(SmtpServer(defer_rate=faults.smtp_defer_rate, seed=faults.seed))
        servers = FunctionServers(
            function_env(settings, app_dsn),
            log_dir=settings.data_dir / "logs",
            startup_timeout=180,
        )
        queues = GcpQueues(
            servers.urls,
            project=settings.gcp_project,
            region=settings.gcp_region,
            dead_letter=DbDeadLetters(db),
            duplicate=duplicated.chance(faults.push_duplicate_rate),
            task_delay=delayed.delay(faults.task_delay_max_s),
            push_backoff=push_backoff,
            task_backoff=task_backoff,
        )
        stack.enter_context(queues)
        servers.add_env(
            {
                **queues.env(),
                **smtp.env(MAIL_FROM),
                "COLONY_LLM_PROVIDER": "openai",
                "COLONY_OPENAI_BASE_URL": model.openai_base_url,
                "OPENAI_API_KEY": "sk-soak-not-a-key",
                # a message refused for now (the injected 4xx) is tried again within the run,
                # not after deliverability's ten minutes (policy.bounces)
                "COLONY_SOFT_BOUNCE_RETRY_SECONDS": "5",
                **(extra_env or {}),
            }
        )
        say(f"starting {len(servers.names)} function servers…")
        stack.enter_context(servers)
        supervisor = stack.enter_context(Supervisor(servers))
        transport = GcpTransport(
            settings.gcp_project,
            settings.gcp_region,
            function_urls=servers.urls,
            pubsub_endpoint=queues.base_url,
            tasks_endpoint=queues.base_url,
        )
        stack.callback(transport.close)
        yield Stack(
            settings,
            db,
            servers,
            supervisor,
            queues,
            model,
            smtp,
            transport,
            duplicated,
            delayed,
        )
