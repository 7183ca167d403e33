"""``colony.ports.SecretStore`` over Secret Manager's REST API, and a local file store.

``SecretManagerSecrets`` makes the documented calls (``secrets.create``,
``secrets.addVersion``, ``versions.access`` of ``latest``, ``secrets.delete``) through
``colony.adapters.google_api`` (no gRPC client in a bundle), against Google or a stand-in
(``colony.testing.secret_manager_server``; ``COLONY_SECRET_MANAGER_ENDPOINT``). Errors name the
secret, never its value.

``FileSecrets`` is the local stack's (no Secret Manager locally, SPEC §9): one file per secret
under ``<data dir>/secrets``, readable by its owner only.
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

from colony.adapters.google_api import GoogleApi, GoogleApiError
from colony.errors import ConfigError, NotFound, ProviderUnavailable, ValidationFailed
from colony.ports import SecretStore
from colony.settings import Settings

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValidationFailed(f"{name!r} is not a Secret Manager secret id")
    return name


class SecretManagerSecrets:
    """Secret Manager of one project."""

    def __init__(self, api: GoogleApi, project: str) -> None:
        self._api, self._project = api, project

    def _path(self, name: str) -> str:
        return f"/v1/projects/{self._project}/secrets/{check_name(name)}"

    def put(self, name: str, value: str) -> None:
        try:
            self._api.call(
                "POST",
                f"/v1/projects/{self._project}/secrets?secretId={check_name(name)}",
                {"replication": {"automatic": {}}, "labels": {"colony": "org-credential"}},
            )
        except GoogleApiError as error:
            if error.status != 409:  # ALREADY_EXISTS: add a version to it
                raise _failed("creating", name, error) from None
        data = base64.b64encode(value.encode()).decode()
        try:
            self._api.call("POST", f"{self._path(name)}:addVersion", {"payload": {"data": data}})
        except GoogleApiError as error:
            raise _failed("adding a version to", name, error) from None

    def get(self, name: str) -> str:
        try:
            answer = self._api.call("GET", f"{self._path(name)}/versions/latest:access")
        except GoogleApiError as error:
            if error.status == 404:
                raise NotFound(f"secret {name!r} has no version") from None
            raise _failed("reading", name, error) from None
        try:
            return base64.b64decode(answer["payload"]["data"]).decode()
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"Secret Manager's answer for {name!r} has no payload") from None

    def delete(self, name: str) -> None:
        try:
            self._api.call("DELETE", self._path(name))
        except GoogleApiError as error:
            if error.status != 404:
                raise _failed("deleting", name, error) from None


def _failed(what: str, name: str, error: GoogleApiError) -> Exception:
    message = f"{what} secret {name!r} failed: HTTP {error.status or 'no answer'}"
    if error.transient:
        return ProviderUnavailable(message)
    return ConfigError(message + " (does this function's account hold the Secret Manager role?)")


class FileSecrets:
    """One file per secret, mode 0600, under ``root`` (the local stack)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def put(self, name: str, value: str) -> None:
        self._root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._root / check_name(name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(value)

    def get(self, name: str) -> str:
        path = self._root / check_name(name)
        if not path.is_file():
            raise NotFound(f"secret {name!r} has no version")
        return path.read_text(encoding="utf-8")

    def delete(self, name: str) -> None:
        (self._root / check_name(name)).unlink(missing_ok=True)


def secrets_from_settings(settings: Settings) -> SecretStore:
    """Secret Manager when deployed or pointed at a stand-in; else files in the data dir."""
    if settings.secret_manager_endpoint or settings.env == "production":
        api = GoogleApi("secretmanager", settings.secret_manager_endpoint, timeout=10.0)
        return SecretManagerSecrets(api, settings.gcp_project)
    return FileSecrets(settings.data_dir / "secrets")
