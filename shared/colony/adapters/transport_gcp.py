"""``GcpTransport``: Pub/Sub topics and Cloud Tasks queues through their REST APIs.

Both calls are one JSON request each (``topics.publish``, ``queues.tasks.create``) over
``colony.adapters.google_api`` (why REST and not the gRPC client libraries: that module's
docstring). ``pubsub_endpoint`` / ``tasks_endpoint`` point them at local servers that speak the
same REST protocol: the Pub/Sub emulator (``http://$PUBSUB_EMULATOR_HOST``) and the Cloud
Tasks emulator's REST gateway (``colony.testing.tasks_gateway``).

A task carries its name (``task_request``), so Cloud Tasks itself refuses a second one with
``ALREADY_EXISTS`` (409): that is the idempotency we rely on, and it counts as done.

Errors: an unknown topic, queue or target is ``ValidationFailed``; a transient failure (429,
5xx, no answer, after the client's own retries) is ``TransportUnavailable``; any other refusal
is ``UpstreamError``.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from colony.adapters.google_api import GoogleApi, GoogleApiError
from colony.adapters.transport_checks import (
    check_attributes,
    check_data,
    check_topic,
    queue_path,
    rfc3339,
    task_request,
    topic_path,
)
from colony.errors import TransportUnavailable, UpstreamError, ValidationFailed

log = logging.getLogger(__name__)

_REMEMBERED_TASKS = 4096  # task names this instance created (skips a create it knows exists)


def _translate(error: GoogleApiError, what: str) -> Exception:
    if error.transient:
        return TransportUnavailable(f"{what} failed transiently: {error}")
    return UpstreamError(f"{what} failed: {error}")


class GcpTransport:
    """``colony.ports.Transport`` on Pub/Sub and Cloud Tasks."""

    def __init__(
        self,
        project: str,
        region: str,
        *,
        function_urls: Mapping[str, str],
        invoker_service_account: str | None = None,
        pubsub_endpoint: str | None = None,
        tasks_endpoint: str | None = None,
        pubsub: GoogleApi | None = None,
        tasks: GoogleApi | None = None,
    ) -> None:
        if not project or not region:
            raise ValidationFailed("GcpTransport needs a project and a region")
        self.project, self.region = project, region
        self.function_urls = dict(function_urls)
        self.invoker_service_account = invoker_service_account
        self.pubsub = pubsub or GoogleApi("pubsub", pubsub_endpoint)
        self.tasks = tasks or GoogleApi("cloudtasks", tasks_endpoint)
        self._lock = threading.Lock()
        self._created: OrderedDict[str, None] = OrderedDict()

    def publish(self, topic: str, data: bytes, attributes: Mapping[str, str]) -> str:
        check_topic(topic)
        payload, attrs = check_data(data), check_attributes(attributes)
        message: dict[str, Any] = {"data": base64.b64encode(payload).decode("ascii")}
        if attrs:
            message["attributes"] = attrs
        path = f"/v1/{topic_path(self.project, topic)}:publish"
        try:
            answer = self.pubsub.call("POST", path, {"messages": [message]})
        except GoogleApiError as error:
            raise _translate(error, f"publishing to {topic}") from error
        ids = answer.get("messageIds") or []
        if len(ids) != 1:
            raise UpstreamError(f"publishing to {topic} returned {len(ids)} message ids, not 1")
        return str(ids[0])

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
        with self._lock:
            if name in self._created:
                return name
        http_request: dict[str, Any] = {
            "httpMethod": "POST",
            "url": url,
            "headers": {"Content-Type": "application/json"},
            "body": base64.b64encode(payload).decode("ascii"),
        }
        if self.invoker_service_account:
            http_request["oidcToken"] = {
                "serviceAccountEmail": self.invoker_service_account,
                "audience": url,
            }
        task = {
            "name": name,
            "scheduleTime": rfc3339(datetime.now(UTC) + timedelta(seconds=delay_seconds)),
            "httpRequest": http_request,
        }
        path = f"/v2/{queue_path(self.project, self.region, queue)}/tasks"
        try:
            created = self.tasks.call("POST", path, {"task": task})
            created_name = str(created.get("name") or name)
        except GoogleApiError as error:
            if error.status != 409:
                raise _translate(error, f"creating task {name}") from error
            log.info("task %s already exists; not created again", name)
            created_name = name
        self._remember(created_name)
        return created_name

    def _remember(self, name: str) -> None:
        with self._lock:
            self._created[name] = None
            self._created.move_to_end(name)
            while len(self._created) > _REMEMBERED_TASKS:
                self._created.popitem(last=False)

    def close(self) -> None:
        self.pubsub.close()
        self.tasks.close()

    def __enter__(self) -> GcpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
