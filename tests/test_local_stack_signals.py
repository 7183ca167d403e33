"""A local stack never strands its processes (issue 38 item 4): a started stack (real
functions-framework servers, the storage emulator and the Java Pub/Sub emulator under its
``gcloud`` wrapper, each in a session of its own as ``make run`` starts them) is sent SIGINT,
SIGTERM, SIGHUP or SIGKILL, and every process it started is counted afterwards: none is left.
A process is the stack's when its environment carries this test's mark (children inherit it:
gunicorn's workers, the emulator's Java), read from /proc. Nothing is mocked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LEAVE_SECONDS = 20.0  # for everything to be gone: gunicorn's quick exit, the emulators' grace
MARK = "COLONY_STACK_MARK"

# The stack, as ``colony demo`` holds it: ``cli.main``'s handling of the stop signals around
# the servers and emulators, serving until stopped.
STACK = """
import sys, threading
from colony.local.functions import FunctionServers
from colony.testing.emulators import pubsub_emulator, storage_emulator
from colony.testing.lifeline import stopping_on_termination

env = {"COLONY_DB_MODE": "dsn", "COLONY_DB_DSN": "postgresql://nobody@127.0.0.1:9/none"}
try:
    with stopping_on_termination():
        with (
            storage_emulator(None),
            pubsub_emulator(),
            FunctionServers(env, ["campaign", "research"]),
        ):
            print("serving", flush=True)
            threading.Event().wait()
except KeyboardInterrupt:
    print("stopped", flush=True)
    sys.exit(130)
"""


def marked(mark: str) -> list[int]:
    """Live processes whose environment carries ``MARK=mark``."""
    found = []
    needle = f"{MARK}={mark}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry))
    return found


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:200].decode()
    except OSError:
        return f"{pid} (gone)"


def gone_within(mark: str, seconds: float) -> list[int]:
    """The stack's processes still alive once they are all gone or ``seconds`` have passed
    (each look is of the processes themselves: this is a bounded wait, not a guess)."""
    deadline = time.monotonic() + seconds
    left = marked(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = marked(mark)
    return left


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_a_stopped_stack_leaves_no_process(signum: int) -> None:
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, "PYTHONPATH": str(REPO / "shared")}
    stack = subprocess.Popen(
        [sys.executable, "-c", STACK],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    try:
        assert stack.stdout is not None
        first = stack.stdout.readline().decode()
        assert first.strip() == "serving", first + stack.stdout.read().decode()[-3000:]
        started = [pid for pid in marked(mark) if pid != stack.pid]
        # two gunicorn masters and their workers, the storage emulator, gcloud and its Java
        # (and a lifeline for each emulator)
        assert len(started) >= 6, started
        stack.send_signal(signum)
        stack.wait(timeout=LEAVE_SECONDS)
        left = [command(pid) for pid in gone_within(mark, LEAVE_SECONDS)]
    finally:
        if stack.poll() is None:
            stack.kill()
        for pid in marked(mark):  # never strand what this test started, whatever happened
            os.kill(pid, signal.SIGKILL)
        stack.wait()
        if stack.stdout is not None:
            stack.stdout.close()
    assert left == []
    if signum != signal.SIGKILL:  # stopped in order, as Ctrl-C stops it
        assert stack.returncode == 130
