"""Google Cloud's REST APIs (Pub/Sub, Cloud Tasks, Secret Manager) over one authorised session.

Why not the client libraries: ``google-cloud-pubsub``, ``-tasks`` and ``-secret-manager`` are
gRPC clients. Importing any of them loads ``grpcio``, protobuf, ``google-api-core`` and (for
Pub/Sub) OpenTelemetry, about 40 MB installed, and every deployed function needs at least one
of the three. We make three calls (publish, create a task, access a secret version), each one
JSON request, so a webhook's bundle would be mostly gRPC it never uses (issue 12: a model-free
function ≤ 60 MB). The calls are the APIs' documented REST methods; the local stand-ins are
the real Pub/Sub emulator (it serves REST too), the real Cloud Tasks emulator behind a REST
gateway (``colony.testing.tasks_gateway``) and a Secret Manager REST stand-in.

Credentials are Application Default Credentials (on Cloud Functions: the function's service
account through the metadata server), scoped to ``cloud-platform`` and refreshed by
``google-auth``'s ``AuthorizedSession``. An ``endpoint`` (an emulator or stand-in) is called
without credentials, as the client libraries do for ``PUBSUB_EMULATOR_HOST``.

Transient failures (429, 5xx, a timeout, a dropped connection) are retried a few times with a
short backoff, so one blip does not fail a whole delivery; past that, ``GoogleApiError`` with
``transient=True`` lets the caller ask the platform to retry later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from colony.errors import ConfigError

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


class GoogleApiError(Exception):
    """A Google API call that failed: its HTTP status (0: no answer) and Google's status name
    (``NOT_FOUND``, ``ALREADY_EXISTS``, ``PERMISSION_DENIED``…, from the error body)."""

    def __init__(self, what: str, status: int, reason: str, message: str) -> None:
        super().__init__(f"{what}: {status or 'no answer'} {reason} {message}".rstrip())
        self.status, self.reason = status, reason

    @property
    def transient(self) -> bool:
        return self.status == 0 or self.status in TRANSIENT_STATUSES


class GoogleApi:
    """One REST API (``https://<api>.googleapis.com`` or a local ``endpoint``)."""

    def __init__(
        self,
        api: str,
        endpoint: str | None = None,
        *,
        timeout: float = 30.0,
        attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        session: Any = None,
    ) -> None:
        self.base_url = (endpoint or f"https://{api}.googleapis.com").rstrip("/")
        self._anonymous = bool(endpoint)
        self._timeout, self._attempts, self._sleep = timeout, attempts, sleep
        self._session = session
        self._owns_session = session is None
        self._lock = threading.Lock()

    def _get_session(self) -> Any:
        with self._lock:
            if self._session is None:
                # lazy: requests and google-auth, loaded on the first call
                import requests

                if self._anonymous:
                    self._session = requests.Session()
                else:
                    # lazy: google-auth, only for credentials (emulators need none)
                    import google.auth
                    import google.auth.exceptions
                    from google.auth.transport.requests import AuthorizedSession

                    try:
                        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM])
                    except google.auth.exceptions.DefaultCredentialsError:
                        raise ConfigError(
                            f"no Google credentials to call {self.base_url}: run with"
                            " Application Default Credentials (a function's service account,"
                            " `gcloud auth application-default login`) or point it at a"
                            " local emulator"
                        ) from None
                    self._session = AuthorizedSession(credentials)
            return self._session

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """``method`` ``/v1/...`` with a JSON ``body``; the JSON answer (``{}`` when empty)."""
        response = self.send(method, path, json=body)
        return dict(response.json()) if response.content else {}

    def send(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        data: bytes | None = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """One call, retried while it fails transiently; the 2xx ``requests.Response``."""
        # lazy: requests and google-auth, loaded on the first call
        import google.auth.exceptions
        import requests

        session = self._get_session()
        what = f"{method} {path.split(':')[0]}"
        error = GoogleApiError(what, 0, "", "not attempted")
        for attempt in range(self._attempts):
            if attempt:
                self._sleep(min(0.25 * 2**attempt, 2.0))
            try:
                response = session.request(
                    method,
                    self.base_url + path,
                    json=json,
                    data=data,
                    params=params,
                    headers=headers,
                    timeout=self._timeout,
                )
            except (
                requests.ConnectionError,
                requests.Timeout,
                google.auth.exceptions.TransportError,  # the token endpoint did not answer
            ) as failure:
                error = GoogleApiError(what, 0, type(failure).__name__, "")
                continue
            if response.status_code < 300:
                return response
            error = _error(what, response)
            if not error.transient:
                break
        raise error

    def close(self) -> None:
        with self._lock:
            session, self._session = self._session, None
        if session is not None and self._owns_session:
            session.close()


def _error(what: str, response: Any) -> GoogleApiError:
    """Google's error body is ``{"error": {"code", "message", "status"}}``; anything else (a
    proxy's HTML page) keeps only the status."""
    try:
        detail = response.json().get("error") or {}
    except ValueError:
        detail = {}
    if not isinstance(detail, dict):
        detail = {}
    return GoogleApiError(
        what,
        response.status_code,
        str(detail.get("status", "")),
        str(detail.get("message", ""))[:300],
    )
