"""Live session notifications for the event streams of one chat instance.

One listener thread per process holds one dedicated connection that ``LISTEN``s on
``colony_chat_events`` and records, per session, the highest event id announced. Streams
wait on a condition variable for their session to move past what they have sent, then read
the new events from the table under their org's RLS scope. Nothing polls: the listener
blocks in ``select()`` on the connection's socket, and a follower blocks on the condition
(with a heartbeat timeout, so idle streams can send a keep-alive comment).

Notifications carry ``<session id>:<seq>`` only, never content: every listener is one of our
own processes, and what a stream sends is read under the caller's org scope.

The same connection ``LISTEN``s on ``colony_approvals`` (``<org id>:<item id>``, sent when an
approval item is added or decided, by whichever function did it). The hub numbers those
announcements itself and keeps the newest ``RECENT_ITEMS`` per org, so the /overview
queue's stream (``GET /approvals/events``) can ask which items changed since the last number
it sent, and read their state under its org's scope; a stream that fell further behind than
that is told to reload the queue.

And on ``colony_campaigns`` (``<org id>``, sent by the triggers of migration 0038 when
anything a campaign funnel counts changes). The hub numbers, per org, those announcements
and the approval ones (a drafted or decided message moves a funnel too); the funnels' stream
(``GET /campaigns/events``) waits past the number it last read, then re-reads the counts.
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from colony.errors import DatabaseError
from colony.store import chat_events
from colony.store.approvals import approvals
from colony.store.insights import funnels

log = logging.getLogger("colony.chat")

Connect = Callable[[], Any]
RECENT_ITEMS = 2000  # announced approval items kept per org (a bulk decision of 500 fits)


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
        self._item_seq = 0
        self._items: dict[str, deque[tuple[int, str]]] = {}
        self._floor: dict[str, int] = {}  # per org: the newest number dropped from its ring

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

    def announce_item(self, org_id: str, item_id: str) -> None:
        """Record that approval item ``item_id`` of ``org_id`` changed; wake its streams."""
        with self._cond:
            self._item_seq += 1
            ring = self._items.setdefault(org_id, deque())
            ring.append((self._item_seq, item_id))
            if len(ring) > RECENT_ITEMS:
                self._floor[org_id] = ring.popleft()[0]
            self._latest[_approvals_key(org_id)] = self._item_seq
            funnel = _campaigns_key(org_id)  # a draft or a decision moves a funnel too
            self._latest[funnel] = self._latest.get(funnel, 0) + 1
            self._cond.notify_all()

    def announce_campaigns(self, org_id: str) -> None:
        """Record that something a funnel of ``org_id`` counts changed; wake its streams."""
        with self._cond:
            key = _campaigns_key(org_id)
            self._latest[key] = self._latest.get(key, 0) + 1
            self._cond.notify_all()

    def campaigns_seq(self, org_id: str) -> int:
        """The number of the org's newest funnel change (0: none yet)."""
        with self._cond:
            return self._latest.get(_campaigns_key(org_id), 0)

    def wait_campaigns(self, org_id: str, seq: int, timeout: float) -> bool:
        """Block until a funnel change past ``seq`` is announced for the org (or ``timeout``)."""
        return self.wait_past(_campaigns_key(org_id), seq, timeout)

    def approvals_seq(self, org_id: str) -> int:
        """The number of the org's newest announced item change (0: none yet)."""
        with self._cond:
            return self._latest.get(_approvals_key(org_id), 0)

    def items_after(self, org_id: str, seq: int) -> tuple[list[str], int, bool]:
        """The org's item ids announced after ``seq`` (each once), the newest number, and
        whether the list is complete (False: some were dropped; reload the queue)."""
        with self._cond:
            ring = self._items.get(org_id, deque())
            ids = list(dict.fromkeys(item for n, item in ring if n > seq))
            latest = self._latest.get(_approvals_key(org_id), 0)
            return ids, latest, seq >= self._floor.get(org_id, 0)

    def wait_items(self, org_id: str, seq: int, timeout: float) -> bool:
        """Block until an item change past ``seq`` is announced for the org (or ``timeout``)."""
        return self.wait_past(_approvals_key(org_id), seq, timeout)

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
                    # Wake everyone: a follower re-reads the table, so nothing is missed;
                    # a funnel stream re-reads its counts (changes may have gone unheard).
                    for key in [k for k in self._latest if k.startswith("campaigns ")]:
                        self._latest[key] += 1
                    self._cond.notify_all()
                if self._stopped:
                    return
                threading.Event().wait(1.0)  # back off before reconnecting

    def _listen(self) -> None:
        conn = self._connect()
        try:
            conn.autocommit = True
            chat_events.listen(conn)
            approvals.listen(conn)
            funnels.listen(conn)
            self._ready.set()
            sock = conn._usock  # pg8000 keeps the raw socket here; select() needs it
            while not self._stopped:
                select.select([sock], [], [], 30.0)
                # pg8000 reads what arrived only when it runs a query: a no-op one (PING),
                # which on a timeout doubles as a liveness check of the connection.
                chat_events.ping(conn)
                while conn.notifications:
                    _, channel, payload = conn.notifications.popleft()
                    if channel == approvals.CHANNEL:
                        org_id, _, item_id = payload.rpartition(":")
                        if org_id and item_id:
                            self.announce_item(org_id, item_id)
                        continue
                    if channel == funnels.CHANNEL:
                        if payload:
                            self.announce_campaigns(payload)
                        continue
                    session_id, _, seq = payload.rpartition(":")
                    if session_id and seq.isdigit():
                        self.announce(session_id, int(seq))
        finally:
            with contextlib.suppress(Exception):  # closing a broken connection may fail too
                conn.close()


def _approvals_key(org_id: str) -> str:
    # not a session id: those never contain a space
    return f"approvals {org_id}"


def _campaigns_key(org_id: str) -> str:
    return f"campaigns {org_id}"


_hub: Hub | None = None
_hub_lock = threading.Lock()


def hub_for(connect: Connect) -> Hub:
    """This process's hub, started on first use."""
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = Hub(connect)
    return _hub.start()
