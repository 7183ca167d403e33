"""The soak's fault injector and its sampler, on a fixed seed.

``Injector`` SIGKILLs a function server's whole session (master and workers: the instance
dies, as Cloud Run loses one) every ``kill_every_s`` seconds on average, the victim drawn
from the functions the soak's work goes through, and restarts PostgreSQL once
(``restart_pg_at_s``; ``-m fast``: every session ends). ``Sampler`` reads, every
``every_s``: the database's connections of the application role (``pg_stat_activity``, over a
connection of its own, made again after the restart) and each function's memory (the RSS of
every process in its server's session, from /proc). Both run on threads until stopped.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colony.local.embedded import restart_cluster
from colony.local.functions import FunctionServers
from colony.testing.lifeline import session_members

# The functions a campaign, a send, a reply and an unsubscribe go through.
VICTIMS = (
    "campaign",
    "enrichment",
    "qualification",
    "message-generator",
    "approval",
    "send",
    "delivery-events",
    "campaign-resume",
)
ACTIVITY = "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND datname = %s"


@dataclass
class Injected:
    kills: list[tuple[float, str]] = field(default_factory=list)  # (time.time(), function)
    pg_restarts: list[tuple[float, float]] = field(default_factory=list)  # (began, seconds)
    errors: list[str] = field(default_factory=list)


class Injector:
    def __init__(
        self,
        servers: FunctionServers,
        pgdata: Path | None,
        *,
        seed: int,
        kill_every_s: float,
        restart_pg_at_s: float | None,
        say: Callable[[str], None],
        victims: tuple[str, ...] = VICTIMS,
    ) -> None:
        self.servers, self.pgdata = servers, pgdata
        self.rng = random.Random(f"{seed}:kills")
        self.kill_every_s, self.restart_pg_at_s = kill_every_s, restart_pg_at_s
        self.victims = tuple(v for v in victims if v in servers.names)
        self.say = say
        self.injected = Injected()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-injector", daemon=True)

    def kill_one(self) -> str:
        name = self.rng.choice(self.victims)
        pid = self.servers.processes()[name]
        with suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        self.injected.kills.append((time.time(), name))
        self.say(f"  fault: SIGKILL {name} (pid {pid})")
        return name

    def restart_pg(self) -> None:
        if self.pgdata is None:
            return
        began = time.time()
        try:
            restart_cluster(self.pgdata)
        except Exception as error:  # reported as a failed fault, never hidden
            self.injected.errors.append(f"PostgreSQL restart failed: {error}")
            return
        self.injected.pg_restarts.append((began, time.time() - began))
        self.say(f"  fault: PostgreSQL restarted ({time.time() - began:.1f}s)")

    def _run(self) -> None:
        started = time.monotonic()
        next_kill = self.rng.expovariate(1 / self.kill_every_s) if self.kill_every_s else None
        pg_due = self.restart_pg_at_s
        while not self._stop.wait(0.5):  # a schedule's tick, not synchronisation
            now = time.monotonic() - started
            if pg_due is not None and now >= pg_due:
                pg_due = None
                self.restart_pg()
            if next_kill is not None and now >= next_kill and self.victims:
                self.kill_one()
                next_kill = now + self.rng.expovariate(1 / self.kill_every_s)

    def start(self) -> Injector:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def session_rss_kb(pid: int) -> int:
    """Resident memory of every process in the session ``pid`` leads (kB)."""
    total = 0
    for member in session_members(pid):
        with suppress(OSError, ValueError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


class Sampler:
    def __init__(
        self,
        servers: FunctionServers,
        connect: Callable[[], Any],
        app_role: str,
        database: str,
        *,
        every_s: float = 2.0,
    ) -> None:
        self.servers, self.connect = servers, connect
        self.app_role, self.database, self.every_s = app_role, database, every_s
        self.connections: list[tuple[float, int]] = []
        self.rss: dict[str, list[tuple[float, int, int]]] = {}  # name → (t, pid, kB)
        self.failed_samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)

    def sample(self) -> None:
        now = time.time()
        try:
            conn = self.connect()
            try:
                cur = conn.cursor()
                cur.execute(ACTIVITY, (self.app_role, self.database))
                self.connections.append((now, int(cur.fetchone()[0])))
            finally:
                conn.close()
        except Exception:  # the server restarting: counted, the next sample tries again
            self.failed_samples += 1
        for name, pid in self.servers.processes().items():
            self.rss.setdefault(name, []).append((now, pid, session_rss_kb(pid)))

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):  # a sampling period, not synchronisation
            self.sample()

    def start(self) -> Sampler:
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
