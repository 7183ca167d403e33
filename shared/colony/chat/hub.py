"""Live session notifications for the event streams of one chat instance.

One listener thread per process holds one dedicated connection that ``LISTEN``s on
``colony_chat_events`` and records, per session, the highest event id announced. Streams
wait on a condition variable for their session to move past what they have sent, then read
the new events from the table under their org's RLS scope. Nothing polls: the listener
blocks in ``select()`` on the connection's socket, and a follower blocks on the condition
(with a heartbeat timeout, so idle streams can send a keep-alive comment).

Notifications carry ``<session id>:<seq>`` only, never content: every listener is one of our
own processes, and what a stream sends is read under the caller's org scope.
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
from collections.abc import Callable
from typing import Any

from colony.errors import DatabaseError
from colony.store import chat_events

log = logging.getLogger("colony.chat")

Connect = Callable[[], Any]


class Hub:
    """Announced event ids per session, fed by a ``LISTEN`` connection (see module doc)."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._latest: dict[str, int] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stopped = False

    def start(self, timeout: float = 10.0) -> Hub:
        """Start listening (once); returns when ``LISTEN`` is in force."""
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="chat-hub", daemon=True)
                self._thread.start()
        if not self._ready.wait(timeout):
            raise DatabaseError("the chat notification listener did not start in time")
        return self

    def announce(self, session_id: str, seq: int) -> None:
        """Record that ``session_id`` has events up to ``seq`` and wake its followers."""
        with self._cond:
            if seq > self._latest.get(session_id, 0):
                self._latest[session_id] = seq
                self._cond.notify_all()

    def wait_past(self, session_id: str, seq: int, timeout: float) -> bool:
        """Block until an event past ``seq`` is announced for the session (or ``timeout``)."""
        with self._cond:
            return (
                self._cond.wait_for(
                    lambda: self._latest.get(session_id, 0) > seq or self._stopped, timeout
                )
                and not self._stopped
            )

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _run(self) -> None:
        while not self._stopped:
            try:
                self._listen()
            except Exception as error:  # the connection dropped: reconnect, and say so
                log.warning("chat hub listener lost its connection: %s", type(error).__name__)
                self._ready.clear()
                with self._cond:
                    # Wake everyone: a follower re-reads the table, so nothing is missed.
                    self._cond.notify_all()
                if self._stopped:
                    return
                threading.Event().wait(1.0)  # back off before reconnecting

    def _listen(self) -> None:
        conn = self._connect()
        try:
            conn.autocommit = True
            chat_events.listen(conn)
            self._ready.set()
            sock = conn._usock  # pg8000 keeps the raw socket here; select() needs it
            while not self._stopped:
                select.select([sock], [], [], 30.0)
                # pg8000 reads what arrived only when it runs a query: a no-op one (PING),
                # which on a timeout doubles as a liveness check of the connection.
                chat_events.ping(conn)
                while conn.notifications:
                    _, _, payload = conn.notifications.popleft()
                    session_id, _, seq = payload.rpartition(":")
                    if session_id and seq.isdigit():
                        self.announce(session_id, int(seq))
        finally:
            with contextlib.suppress(Exception):  # closing a broken connection may fail too
                conn.close()


_hub: Hub | None = None
_hub_lock = threading.Lock()


def hub_for(connect: Connect) -> Hub:
    """This process's hub, started on first use."""
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = Hub(connect)
    return _hub.start()
