"""Restart local function servers that exit, as Cloud Run replaces an instance that dies.

``make run`` and the benches start one functions-framework server per function
(``colony.local.functions``); a server killed outright (the chaos soak's SIGKILLs, an OOM
kill) used to stay dead, and everything pushed to it was nacked until its retries ran out.
A ``Supervisor`` looks at every server a few times a second and starts an exited one again
on the same port (``FunctionServers.restart_if_exited``), so what the transport retries finds
it again, as a push to a replaced Cloud Run instance does. While supervised,
``FunctionServers.check`` no longer reports an exit: the restart is the answer to it.
"""

from __future__ import annotations

import threading

from colony.local.functions import FunctionServers

LOOK_SECONDS = 0.2  # between looks at the servers: a restart begins within it


class Supervisor:
    """``with Supervisor(servers):`` restarts what exits until the block ends."""

    def __init__(self, servers: FunctionServers, *, every: float = LOOK_SECONDS) -> None:
        self.servers = servers
        self._every = every
        self._stop = threading.Event()
        self._lock = threading.Lock()  # held across a look, so stop() never races a restart
        self._thread: threading.Thread | None = None

    def start(self) -> Supervisor:
        self.servers.supervised = True
        self._thread = threading.Thread(target=self._watch, name="colony-supervisor", daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(self._every):  # a periodic look, not synchronisation
            with self._lock:
                if self._stop.is_set():
                    return
                for name in self.servers.names:
                    self.servers.restart_if_exited(name)

    def restarts(self) -> dict[str, int]:
        """How many times each server was started again."""
        return dict(self.servers.restarts)

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            pass  # a look in progress finishes first
        if self._thread is not None:
            self._thread.join()
        self.servers.supervised = False

    def __enter__(self) -> Supervisor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
