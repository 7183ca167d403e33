"""Real Google emulators as subprocesses, for tests and benches.

- ``pubsub_emulator()``: ``gcloud beta emulators pubsub start`` (the Java Pub/Sub fake that
  ships with the Cloud SDK), ready when its HTTP root answers ``Ok``;
- ``tasks_emulator()``: ``gcloud-tasks-emulator`` from PyPI. It pins ``protobuf<5``, so it lives
  in its own virtualenv, ``.venv-tasks`` at the repo root (``make tasks-emulator-venv``); ready
  when its gRPC port accepts connections;
- ``storage_emulator()``: ``gcp-storage-emulator`` from PyPI (in-memory), ready when its
  health endpoint answers; yields the URL for ``STORAGE_EMULATOR_HOST``.

Each starts on a free loopback port in a session of its own (``run_watched``), led by a
lifeline that stops the session when the process that started it dies
(``colony.testing.lifeline``); waits for readiness by polling with a bounded deadline, yields
``host:port``, and on exit stops the whole session and reaps it. The start is watched, not
waited out: an emulator that exits fails at once with its output, unless another process
holds its port, which is a clash, not a fault (``colony.testing.loopback``): then it is
stopped and started again on a new port.
A missing tool raises ``EmulatorUnavailable`` naming what to install.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from colony.testing.lifeline import session_members, tethered
from colony.testing.loopback import (
    ATTEMPTS,
    HOST,
    accepts,
    closed_port,
    foreign_listener,
    held_elsewhere,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
TASKS_VENV = REPO_ROOT / ".venv-tasks"
TASKS_EMULATOR = TASKS_VENV / "bin" / "gcloud-tasks-emulator"
_POLL = 0.05  # seconds between readiness probes
STARTUP_SECONDS: dict[str, float] = {}  # emulator name → seconds its last start took


class EmulatorUnavailable(RuntimeError):
    """The emulator's tool is not installed here."""


class EmulatorFailed(RuntimeError):
    """The emulator exited, or did not become ready before its deadline."""


def _signal(pid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def stop_session(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Stop ``proc`` and everything in its session (it was started in a new one), and reap
    ``proc``.

    The leader's descendants are asked first (so the leader, the lifeline, reaps the tool and
    exits by itself); then the leader; then anything left is killed. By session, not process
    group: ``gcloud`` makes a group of its own for itself and its Java.
    """
    sid = proc.pid
    if proc.poll() is None:
        children = [pid for pid in session_members(sid) if pid != sid]
        for pid in children:
            _signal(pid, signal.SIGTERM)
        if not children:
            _signal(sid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            for pid in session_members(sid):
                _signal(pid, signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                for pid in session_members(sid):
                    _signal(pid, signal.SIGKILL)
                proc.wait()
    for pid in session_members(sid):  # orphans the leader did not take with it
        _signal(pid, signal.SIGKILL)


def _tail(log: IO[bytes], limit: int = 4000) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode("utf-8", "replace")[-limit:]


@contextmanager
def run_watched(
    name: str,
    command: Callable[[int], Sequence[str]],
    ready: Callable[[int], bool],
    *,
    timeout: float,
    env: dict[str, str] | None = None,
    ports: Callable[[], int] = closed_port,
    attempts: int = ATTEMPTS,
) -> Iterator[int]:
    """Run ``command(port)`` in a session of its own until ``ready(port)``; yield the port.

    ``ports`` picks each port (free when picked). Another process may take it before the tool
    binds it; the tool then exits or, as gcp-storage-emulator and gcloud-tasks-emulator do,
    runs on without listening, while a probe may be answered by the other process. So each
    poll asks whether a process outside the session listens there, and an exit counts as a
    clash when the port is held: either way the session is stopped and started again on a new
    port, ``attempts`` times at most. Any other exit fails at once with the tool's output, and
    so does an attempt that is not ready within ``timeout`` seconds. (These tools bind their
    port themselves and take no socket, so it cannot be held for them as ``FunctionServers``
    holds gunicorn's.)
    """
    taken: list[int] = []
    for _ in range(attempts):
        port = ports()
        with tempfile.TemporaryFile() as log:
            started = time.monotonic()
            proc = subprocess.Popen(
                tethered(command(port)),  # it dies with us
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
            try:
                if _came_up(name, proc, port, ready, log, timeout):
                    STARTUP_SECONDS[name] = time.monotonic() - started
                    yield port
                    return
            finally:
                stop_session(proc)
        taken.append(port)
    raise EmulatorFailed(
        f"{name}: another process held its port on each of {attempts} attempts (ports {taken})"
    )


def _came_up(
    name: str,
    proc: subprocess.Popen[bytes],
    port: int,
    ready: Callable[[int], bool],
    log: IO[bytes],
    timeout: float,
) -> bool:
    """True once ``proc``'s session serves ``port``; False once another process holds it."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            if held_elsewhere(port):
                return False
            raise EmulatorFailed(
                f"{name} exited with code {proc.returncode} before it was ready:\n{_tail(log)}"
            )
        answered = ready(port)  # maybe by another process: asked next
        if foreign_listener(port, session_members(proc.pid)):
            return False
        if answered:
            return True
        if time.monotonic() > deadline:
            raise EmulatorFailed(f"{name} was not ready within {timeout:.0f}s:\n{_tail(log)}")
        time.sleep(_POLL)  # readiness probe interval, bounded by the deadline


def http_ok(port: int) -> bool:
    """Whether ``http://127.0.0.1:<port>/`` answers 200."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://{HOST}:{port}/", timeout=1.0) as response:
            return bool(response.status == 200)
    except urllib.error.HTTPError as error:
        error.close()
        return False
    except OSError:
        return False


@contextmanager
def pubsub_emulator(
    project: str = "colony-test", *, timeout: float = 90.0, ports: Callable[[], int] = closed_port
) -> Iterator[str]:
    """Run the Cloud SDK's Pub/Sub emulator; yield its ``host:port`` (PUBSUB_EMULATOR_HOST)."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise EmulatorUnavailable(
            "gcloud is not on PATH: install the Google Cloud CLI with its Pub/Sub emulator "
            "(Debian: google-cloud-cli google-cloud-cli-pubsub-emulator, plus a Java runtime)"
        )
    env = dict(os.environ, CLOUDSDK_CORE_DISABLE_PROMPTS="1")
    env.pop("PUBSUB_EMULATOR_HOST", None)
    with tempfile.TemporaryDirectory(prefix="pubsub-emulator-") as data_dir:

        def command(port: int) -> list[str]:
            return [
                *(gcloud, "beta", "emulators", "pubsub", "start"),
                f"--host-port={HOST}:{port}",
                f"--project={project}",
                f"--data-dir={data_dir}",
            ]

        with run_watched(
            "the Pub/Sub emulator", command, http_ok, timeout=timeout, env=env, ports=ports
        ) as port:
            yield f"{HOST}:{port}"


@contextmanager
def tasks_emulator(
    *, max_retries: int = 3, timeout: float = 60.0, ports: Callable[[], int] = closed_port
) -> Iterator[str]:
    """Run ``gcloud-tasks-emulator`` from ``.venv-tasks``; yield its gRPC ``host:port``.

    It dispatches HTTP tasks to their URLs (ignoring OIDC tokens), retrying a failed task
    every 0.1 s; ``max_retries`` bounds that (``-r``; -1 retries forever). It does NOT enforce
    task-name uniqueness (no ALREADY_EXISTS; ``TasksGateway`` adds it).
    """
    if not TASKS_EMULATOR.exists():
        raise EmulatorUnavailable(
            f"{TASKS_EMULATOR} is missing: run `make tasks-emulator-venv` (it creates "
            ".venv-tasks and installs gcloud-tasks-emulator, which needs protobuf<5)"
        )

    def command(port: int) -> list[str]:
        return [str(TASKS_EMULATOR), "start", "--port", str(port), "-r", str(max_retries), "-q"]

    with run_watched(
        "gcloud-tasks-emulator", command, accepts, timeout=timeout, ports=ports
    ) as port:
        yield f"{HOST}:{port}"


STORAGE_EMULATOR = Path(sys.executable).parent / "gcp-storage-emulator"


@contextmanager
def storage_emulator(
    bucket: str | None = "colony-assets",
    *,
    timeout: float = 30.0,
    data_dir: Path | None = None,
    ports: Callable[[], int] = closed_port,
) -> Iterator[str]:
    """Run ``gcp-storage-emulator`` in memory (or keeping its objects under ``data_dir``, so
    a later run still finds what an earlier one stored); yield ``http://host:port`` (the
    value for ``STORAGE_EMULATOR_HOST``, which google-cloud-storage reads itself).

    ``bucket`` is created at start. The emulator serves V4 signed URLs as plain downloads: it
    does NOT check their signatures (tests verify those themselves).
    """
    tool = STORAGE_EMULATOR if STORAGE_EMULATOR.exists() else shutil.which("gcp-storage-emulator")
    if tool is None:
        raise EmulatorUnavailable(
            "gcp-storage-emulator is not installed: `pip install gcp-storage-emulator` "
            "(it is in the project's dev and local extras)"
        )
    options = ["-q"]
    env = dict(os.environ)
    env.pop("STORAGE_EMULATOR_HOST", None)
    if data_dir is None:
        options.append("--in-memory")
    else:  # the emulator stores under $STORAGE_BASE/$STORAGE_DIR
        data_dir.mkdir(parents=True, exist_ok=True)
        env["STORAGE_BASE"], env["STORAGE_DIR"] = str(data_dir.resolve().parent), data_dir.name
    if bucket:
        options += ["--default-bucket", bucket]

    def command(port: int) -> list[str]:
        return [str(tool), "start", "--host", HOST, "--port", str(port), *options]

    with run_watched(
        "gcp-storage-emulator", command, http_ok, timeout=timeout, env=env, ports=ports
    ) as port:
        yield f"http://{HOST}:{port}"
