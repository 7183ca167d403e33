"""Run the deployed functions locally: one real functions-framework server per function.

Each server is a subprocess (``functions-framework --source functions/<name>/main.py``) on a
loopback port, configured like the deployment: its database DSN, the transport, every
other function's URL in ``COLONY_FUNCTION_URLS`` so the local transport can push to it, and
``K_SERVICE`` (its name, as Cloud Run sets it). With ``log_dir`` each server's output (its
Cloud Logging JSON lines) is appended to ``<log_dir>/<name>.log``, which ``colony logs`` reads.

Every URL must be known before any server starts (each server is given all of them), and
callers read them before ``start`` (to add environment naming them). So each port is bound
when the URLs are made and held until its server takes the socket over: no other process can
be handed it in between (``colony.testing.loopback``). gunicorn takes it by systemd socket
activation, which it supports as deployed; the start is watched, so a server that exits is
reported at once with the end of its output, and ``check`` does the same for one that dies
later, for whoever waits on what the functions do.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from colony.errors import ConfigError
from colony.registry.functions import FUNCTIONS
from colony.testing.lifeline import PARENT_DEATH
from colony.testing.loopback import HOST, accepts, reserve

REPO = Path(__file__).resolve().parents[3]
FUNCTIONS_DIR = REPO / "functions"
STOP_GRACE_SECONDS = 2.0  # an idle server exits well within it after SIGINT
_POLL = 0.05  # seconds between looks at the starting servers
_TAIL = 4000  # characters of a dead server's output quoted in the error

# gunicorn's systemd socket activation (gunicorn/systemd.py): it serves the sockets from fd 3
# on when LISTEN_FDS counts them and LISTEN_PID is its own pid, and binds nothing itself. The
# socket arrives at the fd number given second (pass_fds keeps numbers) and is moved to 3; exec
# keeps the pid. Python, not sh: dash cannot redirect from an fd above 9. First the lifeline
# (argv[1], this process's pid): SIGINT, gunicorn's quick shutdown, when the starter dies.
_ACTIVATE = PARENT_DEATH % signal.SIGINT + (
    "fd = int(sys.argv[2]); os.dup2(fd, 3); fd == 3 or os.close(fd); "
    "os.execve(sys.argv[3], sys.argv[3:], "
    "{**os.environ, 'LISTEN_PID': str(os.getpid()), 'LISTEN_FDS': '1'})"
)


@dataclass(frozen=True, slots=True)
class BundleSource:
    """Serve a function from its deployment bundle (``build/functions/<name>/``) with the
    Python of a virtualenv holding only its ``requirements.txt``, as Cloud Functions does."""

    python: Path
    directory: Path


class FunctionServers:
    """Start ``names`` (default: every registered function); ``urls`` maps name → base URL.

    By default each function runs from the repository with this environment's packages;
    ``bundles`` serves the named ones from their deployment bundles instead. Started once:
    ``stop`` lets the ports go.
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
        self._sockets = {n: reserve() for n in self.names}  # held until its server takes it
        self.urls = {
            n: f"http://{HOST}:{sock.getsockname()[1]}" for n, sock in self._sockets.items()
        }
        self._env = dict(env)
        self._log_dir = log_dir
        self._timeout = startup_timeout
        self._bundles = dict(bundles or {})
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: list[IO[bytes]] = []
        self._log_of: dict[str, IO[bytes]] = {}
        self._output: dict[str, tuple[Path, int]] = {}  # name → its log, where this run began
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._started = False
        self._launch_env: dict[str, str] = {}
        self.supervised = False  # set by a Supervisor: a server that exits is started again
        self.restarts: dict[str, int] = dict.fromkeys(self.names, 0)

    def add_env(self, values: Mapping[str, str]) -> None:
        """More environment for the functions before they start (say, one naming ``urls``)."""
        if self._processes:
            raise RuntimeError("the functions are running; add their environment before start")
        self._env.update(values)

    def start(self) -> FunctionServers:
        if self._started:
            raise RuntimeError("these functions were started already (once only: make new ones)")
        self._started = True
        try:
            self._launch()
            self._wait_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self) -> None:
        env = {**os.environ, **self._env, "COLONY_FUNCTION_URLS": json.dumps(self.urls)}
        env.setdefault("THREADS", "8")
        self._launch_env = env
        log_dir = self._log_dir
        if log_dir is None:  # output is still kept, to quote when a server dies
            self._scratch = tempfile.TemporaryDirectory(prefix="colony-functions-")
            log_dir = Path(self._scratch.name)
        log_dir.mkdir(parents=True, exist_ok=True)
        for name in self.names:
            path = log_dir / f"{name}.log"
            log = open(path, "ab")  # noqa: SIM115 - closed on stop
            self._logs.append(log)
            self._log_of[name] = log
            self._output[name] = (path, log.tell())
            self._processes[name] = self._spawn(name, self._sockets.pop(name), log)

    def _spawn(self, name: str, sock: socket.socket, log: IO[bytes]) -> subprocess.Popen[bytes]:
        """One server for ``name`` on ``sock`` (handed over: closed here once it holds it)."""
        function = FUNCTIONS[name]
        binary = Path(sys.executable).parent / "functions-framework"
        bundle = self._bundles.get(name)
        # A bundle runs from its own directory (its colony/ copy first on sys.path).
        python = str(bundle.python) if bundle else sys.executable
        launcher = [python, "-m", "functions_framework"] if bundle else [str(binary)]
        source = "main.py" if bundle else str(FUNCTIONS_DIR / name / "main.py")
        signature = "cloudevent" if function.trigger == "pubsub" else "http"
        own = {**self._launch_env, "K_SERVICE": name}  # as Cloud Run sets it: names log lines
        port = str(sock.getsockname()[1])  # shown in ps; gunicorn serves the socket
        with sock:  # the server holds its own copy from here
            return subprocess.Popen(
                [
                    *(python, "-c", _ACTIVATE, str(os.getpid()), str(sock.fileno())),
                    *launcher,
                    *("--source", source, "--target", function.entry_point),
                    *("--host", HOST, "--port", port, "--signature-type", signature),
                ],
                # nothing from this checkout may leak into a bundle's interpreter
                env={k: v for k, v in own.items() if k != "PYTHONPATH"} if bundle else own,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(sock.fileno(),),
                start_new_session=True,
                cwd=str(bundle.directory if bundle else REPO),
            )

    def _wait_serving(self) -> None:
        """Until every server accepts connections: all watched at once, so one that exits is
        reported as it does, whichever it is."""
        deadline = time.monotonic() + self._timeout
        waiting = list(self._processes)
        while True:
            self.check()
            waiting = [name for name in waiting if not accepts(self._port(name), timeout=0.2)]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise ConfigError(
                    f"function {waiting[0]!r} did not listen on port {self._port(waiting[0])}"
                    f" within {self._timeout:.0f}s; its output ends:\n{self._tail(waiting[0])}"
                )
            time.sleep(_POLL)  # polling ports not open yet, bounded by the deadline

    def check(self) -> None:
        """Raise ``ConfigError`` if a server has exited, with the end of its output. Whoever
        waits on what the functions do calls it while waiting, so a dead server is reported
        at once rather than when the wait runs out."""
        for name, process in self._processes.items():
            if process.poll() is not None:
                raise ConfigError(
                    f"function {name!r} exited with code {process.returncode};"
                    f" its output ends:\n{self._tail(name)}"
                )

    def _port(self, name: str) -> int:
        return int(self.urls[name].rsplit(":", 1)[1])

    def _tail(self, name: str) -> str:
        path, begun = self._output[name]
        with open(path, "rb") as log:
            log.seek(begun)
            return log.read().decode("utf-8", "replace")[-_TAIL:]

    def restart_if_exited(self, name: str) -> bool:
        """Start ``name`` again on its port if its server has exited; whether it did.

        What the server left behind in its session (a worker its master's death has not
        reached yet still holds the listening socket) is killed first; the port is then bound
        again (``SO_REUSEADDR``: past the dead server's connections in TIME_WAIT, never past a
        listener) and handed to the new server as at the start.
        """
        process = self._processes[name]
        if process.poll() is None:
            return False
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, self._port(name)))
        except OSError:  # a leftover still leaving: the supervisor's next look tries again
            sock.close()
            return False
        self._processes[name] = self._spawn(name, sock, self._log_of[name])
        self.restarts[name] += 1
        return True

    def processes(self) -> dict[str, int]:
        """Each function's server pid now (they change when a supervisor restarts one)."""
        return {name: process.pid for name, process in self._processes.items()}

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
        for sock in self._sockets.values():  # ports of servers never launched
            sock.close()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
        self._processes.clear()
        self._logs.clear()
        self._sockets.clear()

    def __enter__(self) -> FunctionServers:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
