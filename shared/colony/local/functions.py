"""Run the deployed functions locally: one real functions-framework server per function.

Each server is a subprocess (``functions-framework --source functions/<name>/main.py``) on a
free loopback port, configured like the deployment: its database DSN, the transport, every
other function's URL in ``COLONY_FUNCTION_URLS`` so the local transport can push to it, and
``K_SERVICE`` (its name, as Cloud Run sets it). With ``log_dir`` each server's output (its
Cloud Logging JSON lines) is appended to ``<log_dir>/<name>.log``, which ``colony logs`` reads.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from colony.errors import ConfigError
from colony.registry.functions import FUNCTIONS

REPO = Path(__file__).resolve().parents[3]
FUNCTIONS_DIR = REPO / "functions"
STOP_GRACE_SECONDS = 2.0  # an idle server exits well within it after SIGINT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(
    port: int, process: subprocess.Popen[bytes], name: str, deadline: float
) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ConfigError(f"function {name!r} exited with {process.returncode} on start-up")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)  # polling a port that is not open yet, bounded by the deadline
    raise ConfigError(f"function {name!r} did not listen on port {port} in time")


@dataclass(frozen=True, slots=True)
class BundleSource:
    """Serve a function from its deployment bundle (``build/functions/<name>/``) with the
    Python of a virtualenv holding only its ``requirements.txt``, as Cloud Functions does."""

    python: Path
    directory: Path


class FunctionServers:
    """Start ``names`` (default: every registered function); ``urls`` maps name → base URL.

    By default each function runs from the repository with this environment's packages;
    ``bundles`` serves the named ones from their deployment bundles instead.
    """

    def __init__(
        self,
        env: Mapping[str, str],
        names: Iterable[str] | None = None,
        *,
        log_dir: Path | None = None,
        startup_timeout: float = 30.0,
        bundles: Mapping[str, BundleSource] | None = None,
    ) -> None:
        self.names = list(names or FUNCTIONS)
        self.urls = {n: f"http://127.0.0.1:{free_port()}" for n in self.names}
        self._env = dict(env)
        self._log_dir = log_dir
        self._timeout = startup_timeout
        self._bundles = dict(bundles or {})
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: list[IO[bytes]] = []

    def add_env(self, values: Mapping[str, str]) -> None:
        """More environment for the functions before they start (say, one naming ``urls``)."""
        if self._processes:
            raise RuntimeError("the functions are running; add their environment before start")
        self._env.update(values)

    def start(self) -> FunctionServers:
        env = {**os.environ, **self._env, "COLONY_FUNCTION_URLS": json.dumps(self.urls)}
        env.setdefault("THREADS", "8")
        binary = Path(sys.executable).parent / "functions-framework"
        if self._log_dir:
            self._log_dir.mkdir(parents=True, exist_ok=True)
        for name in self.names:
            function = FUNCTIONS[name]
            port = self.urls[name].rsplit(":", 1)[1]
            log: IO[bytes] | int = subprocess.DEVNULL
            if self._log_dir:
                log = open(self._log_dir / f"{name}.log", "ab")  # noqa: SIM115 - closed on stop
                self._logs.append(log)
            bundle = self._bundles.get(name)
            # A bundle runs from its own directory (its colony/ copy first on sys.path).
            launcher = (
                [str(bundle.python), "-m", "functions_framework"] if bundle else [str(binary)]
            )
            source = "main.py" if bundle else str(FUNCTIONS_DIR / name / "main.py")
            signature = "cloudevent" if function.trigger == "pubsub" else "http"
            own = {**env, "K_SERVICE": name}  # as Cloud Run sets it: names the log lines
            self._processes[name] = subprocess.Popen(
                [
                    *launcher,
                    *("--source", source, "--target", function.entry_point),
                    *("--host", "127.0.0.1", "--port", port, "--signature-type", signature),
                ],
                # nothing from this checkout may leak into a bundle's interpreter
                env={k: v for k, v in own.items() if k != "PYTHONPATH"} if bundle else own,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=str(bundle.directory if bundle else REPO),
            )
        deadline = time.monotonic() + self._timeout
        try:
            for name, process in self._processes.items():
                _wait_listening(int(self.urls[name].rsplit(":", 1)[1]), process, name, deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def pid(self, name: str) -> int:
        """The process id serving ``name`` (benchmarks read its peak memory)."""
        return self._processes[name].pid

    def stop(self) -> None:
        """Stop every server: SIGINT, gunicorn's quick shutdown, then SIGKILL for any still
        running after ``STOP_GRACE_SECONDS``.

        This is a teardown, so nothing in flight is worth draining. SIGTERM (gunicorn's
        graceful shutdown) cost the full 10 s wait on every stop while a browser held the
        chat function's event streams (``/approvals/events``, ``/campaigns/events``), and
        quick shutdown alone does not end them either: a worker's request threads are joined
        when it exits, and a stream blocks on the hub until its next heartbeat (15 s), so a
        server with an open stream is killed after the grace. Log lines are flushed as they
        are written (``colony.observability.logs``), so none is lost to the kill.
        """
        for process in self._processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for process in self._processes.values():
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for log in self._logs:
            log.close()
        self._processes.clear()
        self._logs.clear()

    def __enter__(self) -> FunctionServers:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
