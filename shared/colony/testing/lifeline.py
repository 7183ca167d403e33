"""Local processes that die with the process that started them (issue 38 item 4).

The local stack's servers and emulators run in sessions of their own (so a terminal's Ctrl-C
reaches only the demo, which then stops them in order, and so each can be stopped as a
session). The cost: when the demo is killed outright, nothing stops them, and they hold their
ports until someone finds them. Two lifelines close that:

- ``PARENT_DEATH`` (Linux's ``PR_SET_PDEATHSIG``): the kernel sends the process a signal when
  the thread that started it ends, and the setting survives ``exec``. A functions-framework
  server sets it in its launcher before it becomes gunicorn (``colony.local.functions``):
  gunicorn's quick shutdown on SIGINT, and its workers leave when their master does.
- ``tethered(command)``: ``command`` under a small keeper (``python -m
  colony.testing.lifeline``) that leads the session and is the one given the signal; on it,
  or on SIGTERM, SIGINT or SIGHUP, it stops the whole session: ``gcloud``'s Pub/Sub
  emulator is a wrapper whose Java child would outlive it otherwise.

Both check, once set, that the parent that asked is still there (it may have died before),
and leave at once if not. And the starter itself: ``stopping_on_termination`` makes SIGTERM
and SIGHUP (what ``timeout``, a process manager, a CI runner or a closed terminal send) stop
it as Ctrl-C does, so it stops what it started in order.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from types import FrameType

PR_SET_PDEATHSIG = 1  # linux/prctl.h
GRACE_SECONDS = 10.0  # for the session to leave after SIGTERM, before SIGKILL

# Run by a launcher before it execs (argv[1]: the parent's pid): on Linux the signal named
# here reaches the process when its parent dies; elsewhere nothing is set.
PARENT_DEATH = (
    "import ctypes, os, sys; sys.platform != 'linux' or "
    f"ctypes.CDLL(None).prctl({PR_SET_PDEATHSIG}, %d, 0, 0, 0); "
    "os.getppid() == int(sys.argv[1]) or os._exit(1); "
)


def session_members(sid: int) -> Iterator[int]:
    """Live pids in session ``sid`` (Linux /proc; none where there is none), read lazily.
    The session, not the process group: a tool may make groups of its own (``gcloud`` puts
    itself and its Java in a new one), and none of ours starts a session."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            yield int(entry)


def tethered(command: Sequence[str]) -> list[str]:
    """``command`` kept by a lifeline: start it with ``start_new_session=True`` from the
    thread that lives as long as it should."""
    return [sys.executable, "-m", "colony.testing.lifeline", str(os.getpid()), "--", *command]


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def stopping_on_termination() -> Iterator[None]:
    """Within it, SIGTERM and SIGHUP raise ``KeyboardInterrupt`` as SIGINT does (in the main
    thread only: elsewhere signals cannot be handled); the handlers before are put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    raise _Stop(signum)


def _end_session(child: subprocess.Popen[bytes] | None, signum: int) -> None:
    """Everything in our session but us: ``signum`` each, the grace, then SIGKILL. Signals
    to us are ignored from here: ending is what they would ask for."""
    for each in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(each, signal.SIG_IGN)
    me, sid = os.getpid(), os.getsid(0)
    for pid in session_members(sid):
        if pid != me:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
    deadline = time.monotonic() + GRACE_SECONDS
    if child is not None:
        with suppress(subprocess.TimeoutExpired):
            child.wait(timeout=GRACE_SECONDS)
    while time.monotonic() < deadline and any(p != me for p in session_members(sid)):
        time.sleep(0.05)  # orphans of the child (a wrapper's own children) leaving, bounded
    for pid in session_members(sid):
        if pid != me:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    if child is not None:
        with suppress(subprocess.TimeoutExpired):
            child.wait(timeout=GRACE_SECONDS)


def main(argv: Sequence[str]) -> int:
    parent, command = int(argv[0]), list(argv[2:])
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _stop)
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        return 1  # the parent died before the lifeline was set
    child = None
    try:
        child = subprocess.Popen(command)  # our session, our output
        code = child.wait()
    except _Stop as stop:  # the child may have started even if Popen had not returned
        _end_session(child, stop.signum)
        return 128 + stop.signum
    _end_session(child, signal.SIGTERM)  # what the child left behind
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
