"""A local stand-in for Secret Manager's REST API (v1), as ``adapters.secrets`` and
``runtime.secret_manager`` call it.

Routes: ``POST /v1/projects/{p}/secrets?secretId=`` (409 ``ALREADY_EXISTS`` when it exists),
``POST .../secrets/{id}:addVersion``, ``GET .../secrets/{id}/versions/latest:access`` (404
without a version) and ``DELETE .../secrets/{id}``. ``values`` holds every secret's versions
so a test can check what was stored, and what was deleted, without a log line holding it.
"""

from __future__ import annotations

import base64

from colony.testing.wire import RecordedRequest, Reply, Route, WireServer

_SECRET = r"/v1/projects/(?P<project>[^/]+)/secrets/(?P<secret>[^/:]+)"


def _error(status: int, name: str, message: str) -> Reply:
    return Reply(status, {"error": {"code": status, "status": name, "message": message}})


class SecretManagerServer(WireServer):
    """Secret Manager on 127.0.0.1 for project ``project``; use as a context manager."""

    def __init__(self, project: str = "colony-local") -> None:
        self.project = project
        self.values: dict[str, list[str]] = {}  # secret id → its versions, oldest first
        super().__init__(
            routes=[
                Route.of(
                    "secretmanager.create",
                    "POST",
                    r"/v1/projects/(?P<project>[^/]+)/secrets",
                    self._create,
                ),
                Route.of("secretmanager.addVersion", "POST", _SECRET + ":addVersion", self._add),
                Route.of(
                    "secretmanager.access",
                    "GET",
                    _SECRET + "/versions/latest:access",
                    self._access,
                ),
                Route.of("secretmanager.delete", "DELETE", _SECRET, self._delete),
            ]
        )

    def latest(self, secret: str) -> str | None:
        versions = self.values.get(secret)
        return versions[-1] if versions else None

    def _project_ok(self, request: RecordedRequest) -> Reply | None:
        if request.params["project"] != self.project:
            return _error(403, "PERMISSION_DENIED", "Permission denied on project")
        return None

    def _create(self, request: RecordedRequest) -> Reply:
        if (denied := self._project_ok(request)) is not None:
            return denied
        name = (request.query.get("secretId") or [""])[0]
        if not name:
            return _error(400, "INVALID_ARGUMENT", "secretId is required")
        if name in self.values:
            return _error(409, "ALREADY_EXISTS", f"Secret [{name}] already exists.")
        self.values[name] = []
        return Reply(200, {"name": f"projects/{self.project}/secrets/{name}"})

    def _add(self, request: RecordedRequest) -> Reply:
        if (denied := self._project_ok(request)) is not None:
            return denied
        name = request.params["secret"]
        body = request.body if isinstance(request.body, dict) else {}
        if name not in self.values:
            return _error(404, "NOT_FOUND", f"Secret [{name}] not found.")
        data = (body.get("payload") or {}).get("data")
        if not isinstance(data, str):
            return _error(400, "INVALID_ARGUMENT", "payload.data is required")
        self.values[name].append(base64.b64decode(data).decode())
        version = len(self.values[name])
        return Reply(200, {"name": f"projects/{self.project}/secrets/{name}/versions/{version}"})

    def _access(self, request: RecordedRequest) -> Reply:
        if (denied := self._project_ok(request)) is not None:
            return denied
        name = request.params["secret"]
        value = self.latest(name)
        if value is None:
            return _error(404, "NOT_FOUND", f"Secret [{name}] not found or has no versions.")
        data = base64.b64encode(value.encode()).decode()
        return Reply(
            200,
            {
                "name": f"projects/{self.project}/secrets/{name}/versions/latest",
                "payload": {"data": data},
            },
        )

    def _delete(self, request: RecordedRequest) -> Reply:
        if (denied := self._project_ok(request)) is not None:
            return denied
        if self.values.pop(request.params["secret"], None) is None:
            return _error(404, "NOT_FOUND", "Secret not found.")
        return Reply(200, {})
