"""Chromium's DevTools protocol (CDP) over a pipe, every wait bounded by one deadline.

Chromium started with ``--remote-debugging-pipe`` reads protocol messages from its fd 3 and
writes them to its fd 4, each a JSON object ended by a NUL byte. A pipe, not the usual
WebSocket on a TCP port: no port is open for another local process to attach to, nothing
can take the port first, and no WebSocket client is needed; the protocol is the same.

    DevTools.launch(executable, flags, profile, deadline)
      └─ os.posix_spawn: fds 3 and 4 are our pipes' ends, stdout / stderr /dev/null, a new
         session (its process group is the whole browser: killed together), an environment
         of its own (HOME in the throwaway profile; none of ours, so no secret)
    call(method, params, session)  send, then read until its answer; events read meanwhile
                                   are queued for ``event``
    send(...)                      send only (a Fetch verdict whose answer nobody waits for);
                                   ``keep=True`` keeps its answer in ``answers`` by id
    event()                        the next event (``Fetch.requestPaused``...), queued first
    close()                        ``Browser.close``, the group killed whatever it answered

Every read and write waits with ``select`` for at most what is left of the deadline, then
raises ``DeadlinePassed``: a page that spins, a browser that hangs, a pipe that fills never
hold the caller past it. A closed pipe (the browser died) is ``BrowserGone``; an error
answer is ``CdpError``. Nothing of what the browser says is logged.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

MAX_BUFFERED = 64 * 1024 * 1024  # a message this large is a browser gone wrong
CLOSE_GRACE = 2.0  # seconds Browser.close has to end the process before it is killed


class DevToolsError(Exception):
    """The root of what talking to the browser can come to (never a page's fault)."""


class DeadlinePassed(DevToolsError):
    """The deadline passed while waiting for the browser."""


class BrowserGone(DevToolsError):
    """The browser closed its end of the pipe (it exited or crashed)."""


class CdpError(DevToolsError):
    """The browser answered a command with an error."""


@dataclass(frozen=True, slots=True)
class Event:
    """One protocol event: its method, its params, and the session it came from ("" for the
    browser's own)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    session: str = ""


class DevTools:
    """One browser process and its pipe (module docstring)."""

    def __init__(self, pid: int, to_browser: int, from_browser: int, deadline: float) -> None:
        self.pid = pid
        self.log: str | None = None  # the browser's stderr, when ``launch`` started it
        self.deadline = deadline  # time.monotonic() past which nothing is waited for
        self._out = to_browser
        self._in = from_browser
        os.set_blocking(self._out, False)  # a full pipe is waited on, bounded, not blocked on
        self._buffer = bytearray()
        self._events: deque[Event] = deque()
        self._next_id = 0
        self._kept: set[int] = set()
        self.answers: dict[int, dict[str, Any]] = {}  # of commands sent with ``keep``
        self._closed = False

    @classmethod
    def launch(cls, executable: str, flags: list[str], profile: str, deadline: float) -> DevTools:
        """Start ``executable`` with ``flags`` (``--remote-debugging-pipe`` added) in its own
        session, its environment a HOME in ``profile``. OSError if it cannot be started."""
        browser_in, to_browser = os.pipe()
        from_browser, browser_out = os.pipe()
        env = {"HOME": profile, "TMPDIR": profile, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        try:
            pid = os.posix_spawn(
                executable,
                [executable, "--remote-debugging-pipe", *flags],
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, browser_in, 3),
                    (os.POSIX_SPAWN_DUP2, browser_out, 4),
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    # its own diagnostics, kept so a browser that dies says why (``gone``)
                    (os.POSIX_SPAWN_OPEN, 2, _log(profile), os.O_WRONLY | os.O_CREAT, 0o600),
                ],
                setsid=True,
            )
        except OSError:
            for fd in (browser_in, to_browser, from_browser, browser_out):
                os.close(fd)
            raise
        os.close(browser_in)  # the browser's ends: ours close, so its exit is our EOF
        os.close(browser_out)
        browser = cls(pid, to_browser, from_browser, deadline)
        browser.log = _log(profile)
        return browser

    def gone(self) -> BrowserGone:
        """The browser closed its pipe: the error, with the end of what it said on stderr
        (Chromium's own diagnostics: a crash, a missing library, a full /dev/shm)."""
        said = ""
        if self.log:
            try:
                with open(self.log, "rb") as log:
                    log.seek(0, os.SEEK_END)
                    log.seek(max(log.tell() - 400, 0))
                    said = log.read().decode("utf-8", "replace").strip()
            except OSError:
                said = ""
        return BrowserGone("the browser closed its pipe" + (f": {said[-400:]}" if said else ""))

    # -- messages -----------------------------------------------------------------------------

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str = "",
        *,
        keep: bool = False,
    ) -> int:
        """Send a command without waiting for its answer; its id (``keep``: its answer, when
        it comes, is put in ``answers`` under it)."""
        self._next_id += 1
        if keep:
            self._kept.add(self._next_id)
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = memoryview(json.dumps(message, separators=(",", ":")).encode() + b"\0")
        while data:
            readable, writable, _ = select.select([self._in], [self._out], [], self._left())
            if readable:  # never both blocked writing: take in what the browser says
                self._read_some()
            if writable:
                try:
                    data = data[os.write(self._out, data) :]
                except BlockingIOError:
                    continue
                except BrokenPipeError as error:
                    raise self.gone() from error
        return self._next_id

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str = ""
    ) -> dict[str, Any]:
        """Send a command and answer its result (events read meanwhile wait in the queue)."""
        wanted = self.send(method, params, session)
        while True:
            message = self._message()
            if "id" not in message:
                self._events.append(_event(message))
            elif message["id"] == wanted:
                if "error" in message:
                    error = message["error"]
                    raise CdpError(f"{method}: {error.get('message', error)!s}"[:300])
                return dict(message.get("result") or {})
            else:  # the answer to a command sent without waiting (a Fetch verdict)
                self._keep(message)

    def event(self) -> Event:
        """The next event, from the queue first."""
        while not self._events:
            message = self._message()
            if "id" not in message:
                return _event(message)
            self._keep(message)
        return self._events.popleft()

    def _keep(self, message: dict[str, Any]) -> None:
        if message["id"] in self._kept:
            self._kept.discard(message["id"])
            self.answers[message["id"]] = message

    # -- the process --------------------------------------------------------------------------

    def close(self) -> None:
        """Ask the browser to close, wait for it a little, then kill its process group
        (whatever is left of it) and reap it. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self.deadline = min(self.deadline, time.monotonic() + CLOSE_GRACE)
            self.call("Browser.close")
            while True:
                self._message()  # until EOF: the browser has exited
        except DevToolsError:
            pass
        finally:
            with contextlib.suppress(ProcessLookupError):  # already gone, group and all
                os.killpg(self.pid, signal.SIGKILL)  # its renderers and helpers too
            os.waitpid(self.pid, 0)  # SIGKILL cannot be ignored: this returns
            os.close(self._out)
            os.close(self._in)

    # -- reading ------------------------------------------------------------------------------

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlinePassed("the deadline passed waiting for the browser")
        return left

    def _message(self) -> dict[str, Any]:
        while True:
            end = self._buffer.find(b"\0")
            if end >= 0:
                raw = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return dict(json.loads(raw))
            readable, _, _ = select.select([self._in], [], [], self._left())
            if readable:
                self._read_some()

    def _read_some(self) -> None:
        chunk = os.read(self._in, 1 << 20)
        if not chunk:
            raise self.gone()
        self._buffer += chunk
        if len(self._buffer) > MAX_BUFFERED:
            raise BrowserGone(f"a protocol message over {MAX_BUFFERED} bytes")


def _event(message: dict[str, Any]) -> Event:
    return Event(
        str(message.get("method", "")),
        dict(message.get("params") or {}),
        str(message.get("sessionId", "")),
    )


def _log(profile: str) -> str:
    return os.path.join(profile, "browser-stderr.log")
