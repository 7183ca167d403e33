"""Credentials from Secret Manager, fetched once per function instance and cached.

A deployed function's environment carries no secret values, only references: terraform sets
``COLONY_SECRETS`` to the settings names that function needs (``OPENAI_API_KEY,SENTRY_DSN``),
and ``colony.registry.secrets.SECRETS`` maps each name to its Secret Manager id. ``with_secrets``
returns the environment with those names filled in from
``projects/<project>/secrets/<id>/versions/latest``; ``Settings.from_env`` calls it before
reading anything, so the rest of the code never knows where a value came from. Locally
``COLONY_SECRETS`` is unset and the environment is used as it is.

Values are cached per process: a second ``Settings.from_env`` costs no request, and a rotated
secret reaches new instances (deploy, scale-out) without a redeploy. A secret with no version
yet counts as unset (Sentry, Langfuse and the unused provider's key are optional), so the
settings' own rules decide whether it was needed; one the function may not read, or a
Secret Manager failure, stops the start-up naming the secret id, never its value.

The call is Secret Manager's REST ``versions.access`` through ``colony.adapters.google_api``
(no gRPC client in a bundle). ``COLONY_SECRET_MANAGER_ENDPOINT`` points it, without
credentials, at a local stand-in speaking the same REST protocol (tests).
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Mapping

from colony.adapters.google_api import GoogleApi, GoogleApiError
from colony.errors import ConfigError
from colony.registry.secrets import SECRETS

SECRETS_ENV = "COLONY_SECRETS"
ENDPOINT_ENV = "COLONY_SECRET_MANAGER_ENDPOINT"
_TIMEOUT_SECONDS = 10.0

logger = logging.getLogger(__name__)
_cache: dict[str, str | None] = {}  # full version path → value (None: no version)
_lock = threading.Lock()


def requested(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The settings names listed in ``COLONY_SECRETS``, validated against ``SECRETS``."""
    names = tuple(n.strip() for n in environ.get(SECRETS_ENV, "").split(",") if n.strip())
    unknown = sorted(set(names) - set(SECRETS))
    if unknown:
        raise ConfigError(
            f"{SECRETS_ENV} names {', '.join(unknown)}, which colony.registry.secrets.SECRETS"
            " does not declare as secrets"
        )
    return names


def _project(environ: Mapping[str, str]) -> str:
    project = (
        environ.get("COLONY_GCP_PROJECT", "").strip()
        or environ.get("GOOGLE_CLOUD_PROJECT", "").strip()
    )
    if not project:
        raise ConfigError(f"COLONY_GCP_PROJECT is required when {SECRETS_ENV} is set")
    return project


def version_path(project: str, name: str) -> str:
    return f"projects/{project}/secrets/{SECRETS[name]}/versions/latest"


def with_secrets(environ: Mapping[str, str], client: GoogleApi | None = None) -> dict[str, str]:
    """``environ`` plus every name in ``COLONY_SECRETS`` read from Secret Manager.

    A name that is also set in the environment is refused: in production a credential has one
    source, and a literal value in a function's configuration is exactly what this prevents.
    """
    names = requested(environ)
    doubled = sorted(n for n in names if environ.get(n, "").strip())
    if doubled:
        raise ConfigError(
            f"{', '.join(doubled)} is listed in {SECRETS_ENV} and also set in the environment;"
            " remove the literal value (it is read from Secret Manager)"
        )
    project = _project(environ) if names else ""
    resolved = dict(environ)
    for name in names:
        value = _access(version_path(project, name), environ, client)
        if value is not None:
            resolved[name] = value
    return resolved


def _access(path: str, environ: Mapping[str, str], client: GoogleApi | None) -> str | None:
    with _lock:  # one fetch per secret per instance, even when threads race at start-up
        if path in _cache:
            return _cache[path]
        try:
            answer = (client or _client(environ)).call("GET", f"/v1/{path}:access")
        except GoogleApiError as error:
            if error.status == 404:
                logger.warning(
                    "secret %r has no enabled version: its setting stays unset (add one with"
                    " `gcloud secrets versions add %s --data-file=-`)",
                    _secret_id(path),
                    _secret_id(path),
                )
                _cache[path] = None
                return None
            if error.status == 403:
                raise ConfigError(
                    f"this function's service account may not read {_secret_id(path)!r}; grant"
                    " it in terraform (the function's `secrets` in colony.registry.functions)"
                ) from None
            raise ConfigError(
                f"reading {_secret_id(path)!r} from Secret Manager failed: HTTP"
                f" {error.status or 'no answer'} {error.reason}".rstrip()
            ) from None
        try:
            value = base64.b64decode(answer["payload"]["data"]).decode("utf-8").strip()
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                f"Secret Manager's answer for {_secret_id(path)!r} holds no readable payload"
            ) from None
        if not value:
            raise ConfigError(f"the latest version of {_secret_id(path)!r} is empty")
        _cache[path] = value
        return value


def _secret_id(path: str) -> str:
    return path.split("/")[3]


_client_instance: GoogleApi | None = None


def _client(environ: Mapping[str, str]) -> GoogleApi:
    """The Secret Manager API, its session opened on the first call."""
    global _client_instance
    if _client_instance is None:
        endpoint = environ.get(ENDPOINT_ENV, "").strip() or None
        _client_instance = GoogleApi("secretmanager", endpoint, timeout=_TIMEOUT_SECONDS)
    return _client_instance


def clear_cache() -> None:
    """Forget cached values and the client (tests; an instance never needs it)."""
    global _client_instance
    with _lock:
        _cache.clear()
        _client_instance = None
