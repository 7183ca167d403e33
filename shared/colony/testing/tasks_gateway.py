"""Cloud Tasks' REST API in front of the Cloud Tasks emulator, which speaks only gRPC.

``GcpTransport`` creates tasks with the REST method ``POST /v2/{parent}/tasks``. The emulator
(``gcloud-tasks-emulator``) serves the same API over gRPC, so this gateway turns each REST
request into the emulator's ``CreateTask`` with the official client library: the JSON body is
parsed by protobuf's own JSON mapping (``Task.from_json``, the mapping Google's REST front end
uses), and the emulator's answer, or its gRPC error, goes back as Google's REST JSON
(``{"error": {"code", "message", "status"}}``, HTTP status from the gRPC code). Storing,
naming and dispatching the task to its URL when due are the emulator's own.

One thing the emulator does not do is refuse a task name it has seen before, which Cloud
Tasks does (``ALREADY_EXISTS``, for about an hour after the task ran or was deleted): a
second function instance creating the same named task would have it delivered twice. The
gateway remembers every name it created and answers a repeat with Cloud Tasks' 409, so the
transport's idempotency is tested against the behaviour it relies on (the Transport
conformance suite shows it across two transport instances).

It is a ``WireServer``, so tests can also script failures (``fail(503)``) in front of it.
"""

from __future__ import annotations

import threading
from typing import Any

from colony.testing.wire import RecordedRequest, Reply, Route, WireServer

_PARENT = r"/v2/(?P<parent>projects/[^/]+/locations/[^/]+/queues/[^/]+)/tasks"


class TasksGateway(WireServer):
    """REST ``tasks.create`` → the emulator at ``grpc_host`` (``host:port``)."""

    def __init__(self, grpc_host: str) -> None:
        import grpc
        from google.cloud import tasks_v2
        from google.cloud.tasks_v2.services.cloud_tasks.transports import CloudTasksGrpcTransport

        channel = grpc.insecure_channel(grpc_host)
        self.client: Any = tasks_v2.CloudTasksClient(
            transport=CloudTasksGrpcTransport(channel=channel)
        )
        self._names: set[str] = set()  # every task name created through this gateway
        self._names_lock = threading.Lock()
        super().__init__(routes=[Route.of("cloudtasks.create", "POST", _PARENT, self._create)])

    def _create(self, request: RecordedRequest) -> Reply:
        import json

        from google.api_core import exceptions
        from google.cloud import tasks_v2

        body = request.body if isinstance(request.body, dict) else {}
        try:
            task = tasks_v2.Task.from_json(json.dumps(body.get("task", {})))
        except Exception as error:  # json_format.ParseError and friends: the caller's JSON
            return _error(400, "INVALID_ARGUMENT", f"Invalid JSON payload: {error}")
        with self._names_lock:  # held across the create: two racing creates, one task
            if task.name and task.name in self._names:
                return _error(409, "ALREADY_EXISTS", "Requested entity already exists")
            try:
                created = self.client.create_task(parent=request.params["parent"], task=task)
            except exceptions.GoogleAPICallError as error:
                status = error.grpc_status_code.name if error.grpc_status_code else "UNKNOWN"
                return _error(int(error.code or 500), status, str(error.message))
            if task.name:
                self._names.add(task.name)
        return Reply(200, json.loads(tasks_v2.Task.to_json(created)))

    def close(self) -> None:
        super().close()
        self.client.transport.close()


def _error(status: int, name: str, message: str) -> Reply:
    return Reply(status, {"error": {"code": status, "message": message, "status": name}})
