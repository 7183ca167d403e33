"""Messages and tasks that exhausted their delivery attempts on the local transport.

``LocalTransport`` hands each one to its ``dead_letter`` sink; ``DbDeadLetters`` records it in
the ``dead_letters`` table (``colony.store.dead_letters``) in the org its ``org_id``
attribute names, as a Pub/Sub dead-letter topic keeps what Pub/Sub gave up on.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from colony.errors import ColonyError
from colony.store import dead_letters
from colony.store.db import Database

log = logging.getLogger("colony.adapters.transport_local")


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message (or task) that exhausted its delivery attempts.

    For a task, ``topic`` is the queue name and ``message_id`` the full task name.
    """

    topic: str
    message_id: str
    data: bytes
    attributes: Mapping[str, str]
    attempts: int
    last_error: str


DeadLetterSink = Callable[[DeadLetter], None]


class DbDeadLetters:
    """A dead-letter sink writing to ``dead_letters`` in the org of ``attributes["org_id"]`` (a
    Pub/Sub message's) or of its body's ``org_id`` (a Cloud Task's, which has no attributes).

    A letter without an org, or one the database refuses, is logged as an error and kept in
    ``unrecorded``: never dropped silently.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.unrecorded: list[DeadLetter] = []
        self._lock = threading.Lock()

    def __call__(self, letter: DeadLetter) -> None:
        org_id = letter.attributes.get("org_id") or _task_org(letter.data)
        if not org_id:
            log.error(
                "dead letter %s/%s has no org_id attribute; kept in memory, not recorded",
                letter.topic,
                letter.message_id,
            )
            self._keep(letter)
            return
        try:
            with self.db.transaction(org_id) as cur:
                dead_letters.add(
                    cur,
                    org_id,
                    letter.topic,
                    letter.message_id,
                    letter.data,
                    letter.attributes,
                    letter.attempts,
                    letter.last_error,
                )
        except ColonyError as error:
            log.error(
                "could not record dead letter %s/%s for org %s: %s; kept in memory",
                letter.topic,
                letter.message_id,
                org_id,
                error,
            )
            self._keep(letter)

    def _keep(self, letter: DeadLetter) -> None:
        with self._lock:
            self.unrecorded.append(letter)


def _task_org(data: bytes) -> str | None:
    """The org a task's JSON body names (``{"org_id"}`` or ``{"task": {"org_id"}}``), if any."""
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(body, dict):
        return None
    inner = body.get("task")
    found = body.get("org_id") or (inner.get("org_id") if isinstance(inner, dict) else None)
    return found if isinstance(found, str) and found else None
