"""Pub/Sub and Cloud Tasks for a local stack whose function servers may die: one REST
stand-in, outside every function, that keeps what was published until it is delivered.

With ``COLONY_TRANSPORT=local`` each function process holds its own queue of what it
published (``LocalTransport``): a function server killed outright takes its queue with it,
which no deployment does (Pub/Sub and Cloud Tasks keep a message once ``publish`` or
``tasks.create`` has answered). The chaos soak kills function servers, so its functions use
the deployed transport (``COLONY_TRANSPORT=gcp``, ``GcpTransport``: the REST calls
``topics.publish`` and ``queues.tasks.create``) pointed at this stand-in
(``PUBSUB_EMULATOR_HOST`` and ``COLONY_TASKS_ENDPOINT``), which lives in the soak's own
process and hands each message to a ``LocalTransport`` of its own for delivery: Pub/Sub's
push envelope to the subscribed function, Cloud Tasks' request to the task's URL, retried
with back-off on anything but a 2xx, dead-lettered after ``max_attempts`` into the
``dead_letters`` table (``DbDeadLetters``), as the subscriptions' dead-letter policy does.

Faults a soak asks for: ``duplicate`` (asked once per published message: deliver it once
more, with the same message id, as Pub/Sub's at-least-once delivery may) and ``task_delay``
(seconds added to each task's schedule time: a late Cloud Tasks dispatch). A repeated task
name is refused with Cloud Tasks' 409 ``ALREADY_EXISTS``.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from colony.adapters.dead_letters import DeadLetterSink
from colony.adapters.transport_local import LocalTransport
from colony.errors import ColonyError
from colony.testing.wire import RecordedRequest, Reply, Route, WireServer, error_reply

_PUBLISH = r"/v1/projects/(?P<project>[^/]+)/topics/(?P<topic>[^/:]+):publish"
_CREATE = r"/v2/projects/[^/]+/locations/[^/]+/queues/(?P<queue>[^/]+)/tasks"


class GcpQueues(WireServer):
    """See the module docstring. ``function_urls``: where each function is served."""

    def __init__(
        self,
        function_urls: Mapping[str, str],
        *,
        project: str = "colony-local",
        region: str = "us-central1",
        dead_letter: DeadLetterSink | None = None,
        duplicate: Callable[[], bool] | None = None,
        task_delay: Callable[[], float] | None = None,
        push_attempts: int = 5,
        task_attempts: int = 10,
        push_backoff: tuple[float, float] = (10.0, 600.0),
        task_backoff: tuple[float, float] = (5.0, 80.0),
        ack_deadline_s: float = 130.0,
        workers: int = 24,
    ) -> None:
        super().__init__(
            routes=[
                Route.of("pubsub.publish", "POST", _PUBLISH, self._publish),
                Route.of("cloudtasks.create", "POST", _CREATE, self._create),
            ]
        )
        common: dict[str, Any] = {
            "project": project,
            "region": region,
            "dead_letter": dead_letter,
            "request_timeout": ack_deadline_s,
            "workers": workers,
        }
        self.pushes = LocalTransport(
            function_urls,
            max_attempts=push_attempts,
            backoff=push_backoff,
            duplicate=duplicate,
            **common,
        )
        self.tasks = LocalTransport(
            function_urls, max_attempts=task_attempts, backoff=task_backoff, **common
        )
        self._targets = {url.rstrip("/"): name for name, url in function_urls.items()}
        self._task_delay = task_delay
        self._names: set[str] = set()
        self._names_lock = threading.Lock()
        self.published = 0
        self.tasks_created = 0

    def _publish(self, request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        ids = []
        try:
            for message in body.get("messages") or []:
                data = base64.b64decode(message.get("data") or "")
                ids.append(
                    self.pushes.publish(
                        request.params["topic"], data, message.get("attributes") or {}
                    )
                )
        except (ColonyError, ValueError) as error:
            return error_reply(400, f"publish refused: {error}")
        with self._names_lock:
            self.published += len(ids)
        return Reply(200, {"messageIds": ids})

    def _create(self, request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        task = body.get("task") or {}
        http = task.get("httpRequest") or {}
        target = self._targets.get(str(http.get("url", "")).rstrip("/"))
        name = str(task.get("name") or "")
        if target is None or not name:
            return error_reply(400, "a task needs a name and the URL of a local function")
        due = datetime.fromisoformat(str(task.get("scheduleTime")).replace("Z", "+00:00"))
        delay = max(0.0, (due - datetime.now(UTC)).total_seconds())
        delay += self._task_delay() if self._task_delay is not None else 0.0
        with self._names_lock:  # held across the create: two racing creates, one task
            if name in self._names:
                return error_reply(409, "Requested entity already exists")
            try:
                self.tasks.schedule(
                    request.params["queue"],
                    target,
                    base64.b64decode(http.get("body") or ""),
                    task_id=name.rsplit("/", 1)[-1],
                    delay_seconds=delay,
                )
            except (ColonyError, ValueError) as error:
                return error_reply(400, f"task refused: {error}")
            self._names.add(name)
            self.tasks_created += 1
        return Reply(200, {"name": name, "scheduleTime": task.get("scheduleTime")})

    def env(self) -> dict[str, str]:
        """What points a function's ``GcpTransport`` here."""
        host = self.base_url.removeprefix("http://")
        return {
            "COLONY_TRANSPORT": "gcp",
            "PUBSUB_EMULATOR_HOST": host,
            "COLONY_TASKS_ENDPOINT": self.base_url,
        }

    def undelivered(self, within: float | None = None) -> int:
        """Pushes and tasks queued or in flight: all of them, or those due ``within`` s."""
        if within is None:
            return self.pushes.pending() + self.tasks.pending()
        return self.pushes.pending_due(within) + self.tasks.pending_due(within)

    def close(self) -> None:
        super().close()
        self.pushes.close()
        self.tasks.close()
