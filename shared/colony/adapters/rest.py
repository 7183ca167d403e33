"""What the Drive and Notion adapters share: one JSON-over-HTTPS call with bounded retries.

Vendors rate-limit with 429 (and fail with 5xx) and say when to come back in ``Retry-After``
(read by the same ``retry_after_seconds`` the LLM adapters use: seconds or an HTTP date).
``RestClient.send`` honours that a few times, each wait capped, then raises
``ProviderUnavailable`` carrying the last ``Retry-After`` so the platform (Pub/Sub, Cloud
Tasks) retries the whole job later. Anything else that is not 2xx is a ``ProviderError``
(or ``NotFound`` for 404), unless the caller named its status in ``accept`` and reads the
answer itself (a 401 that means "this token is not valid", not "we are broken"). Error
messages name the vendor, method and status, never a body.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import httpx

from colony.adapters.retry_after import retry_after_seconds
from colony.errors import NotFound, ProviderError, ProviderUnavailable, ResponseTooLarge

RETRYABLE = frozenset({429, 500, 502, 503, 504})


class RestClient:
    """An ``httpx.Client`` plus the retry policy. ``token()`` gives the bearer token."""

    def __init__(
        self,
        vendor: str,
        base_url: str,
        token: Callable[[], str],
        *,
        headers: Mapping[str, str] | None = None,
        attempts: int = 4,
        max_wait: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        self.vendor = vendor
        self._token = token
        self._attempts, self._max_wait, self._sleep = attempts, max_wait, sleep
        self._owns = client is None
        self._client = client or httpx.Client(
            base_url=base_url.rstrip("/"), headers=dict(headers or {}), timeout=timeout
        )
        self.waits: list[float] = []  # what Retry-After asked us to wait, for tests and logs

    def send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        max_bytes: int | None = None,
        accept: Collection[int] = (),
    ) -> httpx.Response:
        """One logical call; ``max_bytes`` bounds a download (``ResponseTooLarge`` past it);
        a status in ``accept`` (never a retried one) is returned instead of raised."""
        last: float | None = None
        for attempt in range(1, self._attempts + 1):
            request = self._client.build_request(
                method,
                path,
                params=params,
                json=json,
                headers={"Authorization": f"Bearer {self._token()}"},
            )
            try:
                response = self._client.send(request, stream=True)
            except httpx.TransportError as error:
                raise ProviderUnavailable(
                    f"{self.vendor} {method} could not be reached ({type(error).__name__})"
                ) from None
            try:
                if response.status_code in RETRYABLE:
                    last = retry_after_seconds(response.headers)
                    if attempt < self._attempts:
                        wait = min(self._max_wait, last if last is not None else 0.5 * attempt)
                        self.waits.append(wait)
                        self._sleep(wait)
                        continue
                    raise ProviderUnavailable(
                        f"{self.vendor} {method} answered {response.status_code} "
                        f"{self._attempts} times",
                        retry_after=last,
                    )
                body = _read(response, max_bytes, self.vendor)
            finally:
                response.close()
            if response.status_code in accept:
                return httpx.Response(response.status_code, headers=response.headers, content=body)
            if response.status_code == 404:
                raise NotFound(f"{self.vendor} has no such object ({method} 404)")
            if not 200 <= response.status_code < 300:
                raise ProviderError(f"{self.vendor} {method} answered {response.status_code}")
            return httpx.Response(response.status_code, headers=response.headers, content=body)
        raise AssertionError("unreachable")  # the loop returns or raises

    def close(self) -> None:
        if self._owns:
            self._client.close()


def _read(response: httpx.Response, max_bytes: int | None, vendor: str) -> bytes:
    if max_bytes is None:
        return response.read()
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLarge(f"{vendor} download exceeds {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
