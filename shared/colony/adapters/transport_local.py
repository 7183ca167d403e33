"""``LocalTransport``: Pub/Sub push and Cloud Tasks semantics in-process, for local runs.

``publish`` queues a delivery and returns a fresh message id at once; worker threads POST the
same JSON a Pub/Sub push subscription sends::

    {"message": {"data": "<base64>", "attributes": {...}, "messageId": "<id>",
                 "message_id": "<id>", "publishTime": "<RFC 3339>", "publish_time": "..."},
     "subscription": "projects/<project>/subscriptions/<topic>-push",
     "deliveryAttempt": <n>}

to the URL of the function subscribed to the topic (functions-framework turns it into a
CloudEvent). ``schedule`` POSTs the task body to the target function's URL once its delay has
passed, with Cloud Tasks' ``X-CloudTasks-*`` headers; a task name is created once.

Like Pub/Sub push, any answer but a 2xx (and any connection failure) is a nack: the delivery
is retried with exponential backoff and jitter, with the same message id, up to
``max_attempts``; then it is dead-lettered: kept in ``dead_letters`` and handed to the
``dead_letter`` callback (``colony.adapters.dead_letters.DbDeadLetters`` records it in the
``dead_letters`` table). Nothing
is dropped silently: a failing callback, a message without an org and a topic nobody
subscribes to are all logged and kept in memory.

``drain(timeout)`` blocks (on a condition variable) until every delivery due within the timeout
has been acked or dead-lettered: tests and benches call it instead of sleeping.
"""

from __future__ import annotations

import base64
import heapq
import itertools
import json
import logging
import random
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from colony.adapters.dead_letters import DeadLetter, DeadLetterSink
from colony.adapters.transport_checks import (
    check_attributes,
    check_data,
    check_topic,
    function_url,
    rfc3339,
    subscriber_of,
    task_request,
)
from colony.errors import UpstreamError, ValidationFailed

log = logging.getLogger(__name__)

_JSON = {"Content-Type": "application/json"}


@dataclass(slots=True)
class _Delivery:
    kind: Literal["message", "task"]
    topic: str  # the topic, or the queue for a task
    message_id: str  # the message id, or the full task name
    url: str
    data: bytes
    attributes: dict[str, str]
    created: datetime
    attempts: int = 0
    last_error: str = ""
    eta: float = field(default=0.0)  # wall-clock schedule time of a task (epoch seconds)


class LocalTransport:
    """``colony.ports.Transport`` over HTTP to locally served functions."""

    def __init__(
        self,
        function_urls: Mapping[str, str],
        *,
        project: str = "colony-local",
        region: str = "us-central1",
        max_attempts: int = 5,
        backoff: tuple[float, float] = (0.05, 2.0),
        workers: int = 4,
        dead_letter: DeadLetterSink | None = None,
        request_timeout: float = 30.0,
        copies: int = 1,
        duplicate: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if max_attempts < 1:
            raise ValidationFailed("max_attempts must be at least 1")
        if workers < 1:
            raise ValidationFailed("workers must be at least 1")
        if not 1 <= copies <= 10:
            raise ValidationFailed("copies must be between 1 and 10")
        # Pub/Sub delivers at least once; copies > 1 makes every message arrive that many
        # times with the same message id (duplicate-delivery tests and benchmarks).
        self.copies = copies
        # And ``duplicate``, asked once per message, delivers that one once more (a soak's
        # share of duplicated pushes).
        self._duplicate = duplicate
        base, cap = backoff
        if base < 0 or cap < base:
            raise ValidationFailed("backoff must be (base, cap) with 0 <= base <= cap")
        self.function_urls = dict(function_urls)
        self.project, self.region = project, region
        self.max_attempts = max_attempts
        self.backoff = (base, cap)
        self.dead_letter = dead_letter
        self.dead_letters: list[DeadLetter] = []  # every dead letter, also when a sink took it
        self.undelivered: list[DeadLetter] = []  # what close() found still queued
        self._workers = workers
        self._clock, self._jitter = clock, jitter
        # No proxies from the environment (the functions are local), no redirects (Pub/Sub push
        # does not follow them either: a 3xx is a nack).
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
        self._request_timeout = request_timeout
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Delivery]] = []
        self._seq = itertools.count()
        self._in_flight = 0
        self._task_names: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.acked = 0

    # -- the port -------------------------------------------------------------------------

    def publish(self, topic: str, data: bytes, attributes: Mapping[str, str]) -> str:
        check_topic(topic)
        payload, attrs = check_data(data), check_attributes(attributes)
        message_id = str(uuid.uuid4())
        subscriber = subscriber_of(topic)
        if subscriber is None:
            # Pub/Sub would accept it and, with no subscription, keep it nowhere: say so.
            why = f"no function subscribes to {topic!r}"
            letter = DeadLetter(topic, message_id, payload, attrs, 0, why)
            log.warning("published to %s, which no function subscribes to", topic)
            self._record_dead(letter)
            return message_id
        url = function_url(self.function_urls, subscriber.name)
        published = datetime.now(UTC)
        extra = 1 if self._duplicate is not None and self._duplicate() else 0
        for _ in range(self.copies + extra):
            delivery = _Delivery("message", topic, message_id, url, payload, attrs, published)
            self._enqueue(delivery, self._clock())
        return message_id

    def schedule(
        self, queue: str, target: str, body: bytes, *, task_id: str, delay_seconds: float = 0.0
    ) -> str:
        url, payload, name = task_request(
            self.function_urls,
            self.project,
            self.region,
            queue,
            target,
            body,
            task_id,
            delay_seconds,
        )
        now = datetime.now(UTC)
        delivery = _Delivery(
            "task",
            queue,
            name,
            url,
            payload,
            {"target": target},
            now,
            eta=now.timestamp() + delay_seconds,
        )
        with self._cond:  # re-entrant: _enqueue takes it again
            if name in self._task_names:
                return name
            self._enqueue(delivery, self._clock() + delay_seconds)
            self._task_names.add(name)
        return name

    # -- waiting and stopping -------------------------------------------------------------

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until every delivery due within ``timeout`` is acked or dead-lettered.

        Tasks first due after the deadline are not waited for; a retry is, whenever it is due.
        Returns False if the deadline passed first (or the transport was closed with work left).
        """
        deadline = self._clock() + timeout
        with self._cond:
            while self._outstanding(deadline):
                remaining = deadline - self._clock()
                if remaining <= 0 or self._closed:
                    return False
                self._cond.wait(remaining)
            return True

    def pending(self) -> int:
        """Deliveries queued or in flight (scheduled tasks not yet due included)."""
        with self._cond:
            return len(self._heap) + self._in_flight

    def pending_due(self, within: float) -> int:
        """Deliveries in flight or due within ``within`` seconds (a retry whenever it is due)."""
        with self._cond:
            deadline = self._clock() + within
            return self._in_flight + sum(
                1 for due, _, item in self._heap if due <= deadline or item.attempts > 0
            )

    def close(self) -> None:
        """Stop the workers (after their current attempt). Anything still queued is logged and
        kept in ``undelivered``; call ``drain`` first to finish the work."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            left = [item for _, _, item in self._heap]
            self._heap.clear()
            self._cond.notify_all()
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()
        for item in left:
            self.undelivered.append(_letter(item, item.last_error or "transport closed first"))
        if left:
            log.warning(
                "local transport closed with %d undelivered deliveries: %s",
                len(left),
                ", ".join(f"{i.topic}/{i.message_id}" for i in left),
            )

    def __enter__(self) -> LocalTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------

    def _outstanding(self, deadline: float) -> bool:
        if self._in_flight:
            return True
        return any(due <= deadline or item.attempts > 0 for due, _, item in self._heap)

    def _enqueue(self, delivery: _Delivery, due: float) -> None:
        with self._cond:
            if self._closed:
                raise UpstreamError("the local transport is closed")
            heapq.heappush(self._heap, (due, next(self._seq), delivery))
            if not self._threads:
                for n in range(self._workers):
                    thread = threading.Thread(
                        target=self._work, name=f"local-transport-{n}", daemon=True
                    )
                    thread.start()
                    self._threads.append(thread)
            self._cond.notify_all()

    def _next(self) -> _Delivery | None:
        with self._cond:
            while not self._closed:
                now = self._clock()
                if self._heap and self._heap[0][0] <= now:
                    _, _, item = heapq.heappop(self._heap)
                    self._in_flight += 1
                    return item
                self._cond.wait(self._heap[0][0] - now if self._heap else None)
            return None

    def _work(self) -> None:
        while (item := self._next()) is not None:
            self._attempt(item)

    def _attempt(self, item: _Delivery) -> None:
        item.attempts += 1
        try:
            error = self._post(item)
        except Exception as exc:  # a bug, not the receiver: still retried, never lost
            log.exception("local transport failed to send %s", item.message_id)
            error = f"{type(exc).__name__}: {exc}"
        with self._cond:
            if error is None:
                self.acked += 1
                self._in_flight -= 1
                self._cond.notify_all()
                return
            item.last_error = error
            if self._closed:
                self.undelivered.append(_letter(item, error))
                log.warning("%s %s undelivered: transport closed", item.topic, item.message_id)
                self._in_flight -= 1
                self._cond.notify_all()
                return
            if item.attempts < self.max_attempts:
                base, cap = self.backoff
                delay = min(cap, base * 2 ** (item.attempts - 1)) * (0.5 + self._jitter() / 2)
                heapq.heappush(self._heap, (self._clock() + delay, next(self._seq), item))
                self._in_flight -= 1
                self._cond.notify_all()
                return
        log.warning(
            "dead-lettering %s %s after %d attempts: %s",
            item.topic,
            item.message_id,
            item.attempts,
            error,
        )
        self._record_dead(_letter(item, error))  # never raises
        self._finish()

    def _finish(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def _record_dead(self, letter: DeadLetter) -> None:
        with self._cond:
            self.dead_letters.append(letter)
        if self.dead_letter is None:
            log.error(
                "dead letter %s/%s (%d attempts): %s; no dead-letter sink is configured",
                letter.topic,
                letter.message_id,
                letter.attempts,
                letter.last_error,
            )
            return
        try:
            self.dead_letter(letter)
        except Exception:
            log.exception(
                "the dead-letter sink failed on %s/%s; it stays in LocalTransport.dead_letters",
                letter.topic,
                letter.message_id,
            )

    def _request(self, item: _Delivery) -> tuple[bytes, dict[str, str]]:
        if item.kind == "task":
            headers = dict(_JSON)
            headers["X-CloudTasks-QueueName"] = item.topic
            headers["X-CloudTasks-TaskName"] = item.message_id.rsplit("/", 1)[-1]
            headers["X-CloudTasks-TaskRetryCount"] = str(item.attempts - 1)
            headers["X-CloudTasks-TaskExecutionCount"] = str(item.attempts - 1)
            headers["X-CloudTasks-TaskETA"] = f"{item.eta:.6f}"
            return item.data, headers
        published = rfc3339(item.created)
        envelope = {
            "message": {
                "data": base64.b64encode(item.data).decode("ascii"),
                "attributes": item.attributes,
                "messageId": item.message_id,
                "message_id": item.message_id,
                "publishTime": published,
                "publish_time": published,
            },
            "subscription": f"projects/{self.project}/subscriptions/{item.topic}-push",
            "deliveryAttempt": item.attempts,
        }
        return json.dumps(envelope).encode(), dict(_JSON)

    def _post(self, item: _Delivery) -> str | None:
        """POST one attempt; None when acked (2xx), else what went wrong."""
        body, headers = self._request(item)
        request = urllib.request.Request(item.url, data=body, headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=self._request_timeout) as response:
                response.read()
                status = int(response.status)
        except urllib.error.HTTPError as error:  # any status outside 2xx
            with error:
                detail = error.read(300).decode("utf-8", "replace")
            return f"HTTP {error.code}: {detail}"
        except OSError as error:  # URLError, refused, reset, timed out
            return f"{type(error).__name__}: {error}"
        return None if 200 <= status < 300 else f"HTTP {status}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _letter(item: _Delivery, error: str) -> DeadLetter:
    attributes = item.attributes if item.kind == "message" else {}
    return DeadLetter(
        item.topic, item.message_id, item.data, dict(attributes), item.attempts, error
    )
