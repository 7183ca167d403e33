"""``LangfuseTraces``: the ``TraceArchive`` port on Langfuse's public REST API.

Two endpoints (Langfuse's OpenAPI, ``/api/public``; Basic auth with the project's public key
as the user and its secret key as the password):

- ``GET /api/public/traces?tags=<tag>&page=<n>&limit=<k>&fields=core``: a page of traces
  carrying every given tag, ``{"data": [{"id": ...}, ...], "meta": {"page", "limit",
  "totalItems", "totalPages"}}``; pages count from 1;
- ``DELETE /api/public/traces`` with ``{"traceIds": [...]}``: deletes them (Langfuse removes
  the trace data asynchronously; erasure lists again to verify what is left).

429 and 5xx are retried a few times (``Retry-After`` honoured, capped), then
``ProviderUnavailable`` so the erasure task is retried later; anything else not 2xx is
``ProviderError``. Messages name the call and the status, never a body or a key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from colony.adapters.retry_after import retry_after_seconds
from colony.errors import ConfigError, ProviderError, ProviderUnavailable
from colony.settings import Settings

PAGE_LIMIT = 100  # traces per listing page
DELETE_BATCH = 100  # trace ids per DELETE
RETRYABLE = frozenset({429, 500, 502, 503, 504})
DEFAULT_HOST = "https://cloud.langfuse.com"


class LangfuseTraces:
    """``colony.ports.TraceArchive`` on one Langfuse project."""

    def __init__(
        self,
        host: str,
        public_key: str,
        secret_key: str,
        *,
        attempts: int = 4,
        max_wait: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        timeout: float = 30.0,
    ) -> None:
        self._client = httpx.Client(
            base_url=host.rstrip("/"), auth=(public_key, secret_key), timeout=timeout
        )
        self._attempts, self._max_wait, self._sleep = attempts, max_wait, sleep

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        for attempt in range(1, self._attempts + 1):
            try:
                response = self._client.request(method, path, **kwargs)
            except httpx.TransportError as error:
                raise ProviderUnavailable(
                    f"Langfuse {method} {path} could not be reached ({type(error).__name__})"
                ) from None
            if response.status_code in RETRYABLE:
                wait = retry_after_seconds(response.headers)
                if attempt < self._attempts:
                    self._sleep(min(self._max_wait, wait if wait is not None else 0.5 * attempt))
                    continue
                raise ProviderUnavailable(
                    f"Langfuse {method} {path} answered {response.status_code}", retry_after=wait
                )
            if not 200 <= response.status_code < 300:
                raise ProviderError(f"Langfuse {method} {path} answered {response.status_code}")
            return response.json() if response.content else {}
        raise AssertionError("unreachable")  # the loop returns or raises

    def trace_ids(self, tag: str) -> list[str]:
        found: list[str] = []
        page = 1
        while True:
            body = self._send(
                "GET",
                "/api/public/traces",
                params={"tags": tag, "page": page, "limit": PAGE_LIMIT, "fields": "core"},
            )
            found += [str(trace["id"]) for trace in body.get("data") or ()]
            pages = int((body.get("meta") or {}).get("totalPages") or 0)
            if page >= pages:
                return found
            page += 1

    def delete(self, trace_ids: Sequence[str]) -> None:
        ids = list(trace_ids)
        for start in range(0, len(ids), DELETE_BATCH):
            self._send(
                "DELETE", "/api/public/traces", json={"traceIds": ids[start : start + DELETE_BATCH]}
            )

    def close(self) -> None:
        self._client.close()


def trace_archive_from_settings(settings: Settings) -> LangfuseTraces | None:
    """The Langfuse project the traces went to, or None when tracing is off (no keys): then
    there is nothing to erase there."""
    if not settings.langfuse_public_key or not settings.langfuse_secret_key:
        return None
    if settings.env == "production" and not settings.langfuse_host:
        raise ConfigError("LANGFUSE_HOST is required to erase traces in production")
    return LangfuseTraces(
        settings.langfuse_host or DEFAULT_HOST,
        settings.langfuse_public_key,
        settings.langfuse_secret_key,
    )
