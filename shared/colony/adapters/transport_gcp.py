"""``GcpTransport``: Pub/Sub topics and Cloud Tasks queues through Google's client libraries.

The clients are built on first use, with their imports inside, so a function that never
publishes or schedules does not pay for loading them on a cold start. ``PUBSUB_EMULATOR_HOST``
is honoured by the Pub/Sub client itself; ``tasks_emulator_host`` points the Cloud Tasks client
at an emulator over an insecure gRPC channel.

Errors: an unknown topic, queue or target is ``ValidationFailed``; a transient Google API
failure (unavailable, deadline exceeded, throttled, aborted, internal) is
``TransportUnavailable``; any other API failure is ``UpstreamError``.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from colony.adapters.transport import (
    check_attributes,
    check_data,
    check_topic,
    queue_path,
    task_request,
    topic_path,
)
from colony.errors import TransportUnavailable, UpstreamError, ValidationFailed

log = logging.getLogger(__name__)

_TRANSIENT = (
    "ServiceUnavailable",
    "DeadlineExceeded",
    "InternalServerError",
    "BadGateway",
    "GatewayTimeout",
    "TooManyRequests",
    "ResourceExhausted",
    "Aborted",
    "Unknown",
    "RetryError",
)
_REMEMBERED_TASKS = 4096  # task names this instance created (skips a create it knows exists)


def _translate(error: BaseException, what: str) -> Exception:
    """A google.api_core / future error, re-expressed as ours."""
    from google.api_core import exceptions as gexc

    if isinstance(error, concurrent.futures.TimeoutError | TimeoutError):
        return TransportUnavailable(f"{what} timed out")
    transient = tuple(getattr(gexc, name) for name in _TRANSIENT if hasattr(gexc, name))
    if isinstance(error, transient):
        return TransportUnavailable(f"{what} failed transiently: {error}")
    if isinstance(error, gexc.GoogleAPICallError):
        return UpstreamError(f"{what} failed: {error}")
    return UpstreamError(f"{what} failed: {type(error).__name__}: {error}")


class GcpTransport:
    """``colony.ports.Transport`` on Pub/Sub and Cloud Tasks."""

    def __init__(
        self,
        project: str,
        region: str,
        *,
        function_urls: Mapping[str, str],
        invoker_service_account: str | None = None,
        tasks_client: Any = None,
        publisher: Any = None,
        tasks_emulator_host: str | None = None,
        publish_timeout: float = 30.0,
        create_timeout: float = 30.0,
    ) -> None:
        if not project or not region:
            raise ValidationFailed("GcpTransport needs a project and a region")
        self.project, self.region = project, region
        self.function_urls = dict(function_urls)
        self.invoker_service_account = invoker_service_account
        self.tasks_emulator_host = tasks_emulator_host
        self.publish_timeout, self.create_timeout = publish_timeout, create_timeout
        self._publisher = publisher
        self._tasks_client = tasks_client
        self._owns_publisher = publisher is None
        self._owns_tasks_client = tasks_client is None
        self._lock = threading.Lock()
        self._created: OrderedDict[str, None] = OrderedDict()

    # -- clients, built on first use ------------------------------------------------------

    def _get_publisher(self) -> Any:
        with self._lock:
            if self._publisher is None:
                from google.cloud.pubsub_v1 import PublisherClient

                self._publisher = PublisherClient()
            return self._publisher

    def _get_tasks_client(self) -> Any:
        with self._lock:
            if self._tasks_client is None:
                from google.cloud import tasks_v2

                if self.tasks_emulator_host:
                    import grpc
                    from google.cloud.tasks_v2.services.cloud_tasks.transports import (
                        CloudTasksGrpcTransport,
                    )

                    channel = grpc.insecure_channel(self.tasks_emulator_host)
                    self._tasks_client = tasks_v2.CloudTasksClient(
                        transport=CloudTasksGrpcTransport(channel=channel)
                    )
                else:
                    self._tasks_client = tasks_v2.CloudTasksClient()
            return self._tasks_client

    # -- the port -------------------------------------------------------------------------

    def publish(self, topic: str, data: bytes, attributes: Mapping[str, str]) -> str:
        check_topic(topic)
        payload, attrs = check_data(data), check_attributes(attributes)
        publisher = self._get_publisher()
        what = f"publishing to {topic}"
        try:
            future = publisher.publish(topic_path(self.project, topic), payload, **attrs)
            message_id = future.result(timeout=self.publish_timeout)
        except Exception as error:
            raise _translate(error, what) from error
        return str(message_id)

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
        parent = queue_path(self.project, self.region, queue)
        with self._lock:
            if name in self._created:
                return name
        http_request: dict[str, Any] = {
            "http_method": "POST",
            "url": url,
            "headers": {"Content-Type": "application/json"},
            "body": payload,
        }
        if self.invoker_service_account:
            http_request["oidc_token"] = {
                "service_account_email": self.invoker_service_account,
                "audience": url,
            }
        task = {
            "name": name,
            "schedule_time": datetime.now(UTC) + timedelta(seconds=delay_seconds),
            "http_request": http_request,
        }
        client = self._get_tasks_client()
        from google.api_core.exceptions import AlreadyExists

        try:
            created = client.create_task(parent=parent, task=task, timeout=self.create_timeout)
            created_name = str(getattr(created, "name", "") or name)
        except AlreadyExists:
            log.info("task %s already exists; not created again", name)
            created_name = name
        except Exception as error:
            raise _translate(error, f"creating task {name}") from error
        self._remember(created_name)
        return created_name

    def _remember(self, name: str) -> None:
        with self._lock:
            self._created[name] = None
            self._created.move_to_end(name)
            while len(self._created) > _REMEMBERED_TASKS:
                self._created.popitem(last=False)

    def close(self) -> None:
        """Flush and close the clients this transport built (injected ones are the caller's)."""
        with self._lock:
            publisher = tasks_client = None
            if self._owns_publisher:
                publisher, self._publisher = self._publisher, None
            if self._owns_tasks_client:
                tasks_client, self._tasks_client = self._tasks_client, None
        if publisher is not None:
            publisher.stop()
            publisher.transport.close()
        if tasks_client is not None:
            tasks_client.transport.close()

    def __enter__(self) -> GcpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
