"""Clerk's Backend API, as the resync of an org's people reads it (``ports.ClerkDirectory``).

``GET {api}/v1/organizations/{org}/memberships?limit=&offset=`` with the instance's secret key
as a bearer token, page after page until ``total_count`` is reached (or a short page). 429
and 5xx are retried after Clerk's ``Retry-After`` (``adapters.rest``); an org Clerk does not
have is ``NotFound``. ``COLONY_CLERK_API_URL`` points it at a stand-in locally.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from colony.adapters.rest import RestClient
from colony.errors import ConfigError, ProviderError
from colony.settings import Settings

API = "https://api.clerk.com"
PAGE = 100
MAX_PAGES = 1000  # 100,000 people: far past any team, and a bound on a looping answer


class ClerkBackend:
    def __init__(self, rest: RestClient) -> None:
        self._rest = rest

    def memberships(self, org_id: str) -> Iterator[dict[str, Any]]:
        offset = 0
        for _ in range(MAX_PAGES):
            answer = self._rest.send(
                "GET",
                f"/v1/organizations/{org_id}/memberships",
                params={"limit": PAGE, "offset": offset},
            ).json()
            rows, total = answer.get("data"), answer.get("total_count")
            if not isinstance(rows, list) or not isinstance(total, int):
                raise ProviderError("Clerk's membership list had no data or total_count")
            yield from rows
            offset += len(rows)
            if not rows or offset >= total:
                return
        raise ProviderError(f"Clerk's membership list did not end after {MAX_PAGES} pages")

    def close(self) -> None:
        self._rest.close()


def clerk_backend_from_settings(settings: Settings) -> ClerkBackend:
    key = settings.clerk_secret_key
    if not key:
        raise ConfigError("COLONY_CLERK_SECRET_KEY is required to read an org's people from Clerk")
    return ClerkBackend(RestClient("Clerk", settings.clerk_api_url or API, lambda: key))
