"""``colony.ports.CrmAuthorizer`` for HubSpot's public-app OAuth: the authorize URL with the
app's scopes, the ``authorization_code`` and ``refresh_token`` grants
(``POST /oauth/v1/token``, form-encoded), whose token an access token is
(``GET /oauth/v1/access-tokens/{token}``: the portal's ``hub_id``), and revoking a refresh
token (``DELETE /oauth/v1/refresh-tokens/{token}``).

Over httpx, not the SDK: connecting an org is the admin function's work, and the SDK
(18.6 MB of Python, 0.4 s to import) would weigh on that bundle for four form posts
(``colony.adapters.hubspot`` says where the SDK is used). HubSpot's refusal of a code or
refresh token (400 with ``status`` ``BAD_AUTH_CODE``, ``BAD_REFRESH_TOKEN``, ...) is
``CrmAccessRefused`` with that status as its reason; a refused app credential
(``BAD_CLIENT_ID``, ``BAD_CLIENT_SECRET``, ``BAD_REDIRECT_URI``) is our configuration,
``ConfigError``; 429, 5xx and an unreachable HubSpot are ``ProviderUnavailable``. Tokens are
never logged nor put in an error.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import httpx

from colony.adapters.retry_after import retry_after_seconds
from colony.errors import ConfigError, CrmAccessRefused, ProviderError, ProviderUnavailable
from colony.ports import CrmAccount, CrmTokens
from colony.settings import Settings

AUTHORIZE_URL = "https://app.hubspot.com/oauth/authorize"
API_URL = "https://api.hubapi.com"
# What the app asks of a portal: its CRM records read and written; engagements (emails,
# notes, calls) are written under the contacts scope. ``oauth`` is HubSpot's own.
SCOPES: tuple[str, ...] = (
    "oauth",
    "crm.objects.contacts.read",
    "crm.objects.contacts.write",
    "crm.objects.companies.read",
    "crm.objects.companies.write",
    "crm.objects.deals.read",
    "crm.objects.deals.write",
)
_OURS = frozenset({"BAD_CLIENT_ID", "BAD_CLIENT_SECRET", "BAD_REDIRECT_URI", "BAD_GRANT_TYPE"})


class HubSpotOAuth:
    """One app's OAuth (``client_id``, ``client_secret``) against ``base_url``."""

    scopes = SCOPES

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        base_url: str = API_URL,
        authorize_url: str = AUTHORIZE_URL,
        timeout: float = 15.0,
    ) -> None:
        self._id, self._secret, self._authorize = client_id, client_secret, authorize_url
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)

    def authorize_url(self, state: str, redirect_uri: str) -> str:
        query = {"client_id": self._id, "redirect_uri": redirect_uri, "scope": " ".join(SCOPES)}
        return f"{self._authorize}?{urlencode({**query, 'state': state}, quote_via=quote)}"

    def exchange_code(self, code: str, redirect_uri: str) -> CrmTokens:
        return self._grant({"grant_type": "authorization_code", "code": code}, redirect_uri)

    def refresh(self, refresh_token: str) -> CrmTokens:
        return self._grant({"grant_type": "refresh_token", "refresh_token": refresh_token})

    def account(self, access_token: str) -> CrmAccount:
        answer = self._send("GET", f"/oauth/v1/access-tokens/{quote(access_token, safe='')}")
        if answer.status_code == 404:
            raise CrmAccessRefused("HubSpot does not know the access token", reason="NOT_FOUND")
        body = self._json(answer, "access token")
        if "hub_id" not in body:
            raise ProviderError("HubSpot's access token answer names no hub_id")
        scopes = tuple(str(s) for s in body.get("scopes") or [])
        user = body.get("user")
        return CrmAccount(str(body["hub_id"]), scopes, str(user) if user else None)

    def revoke(self, refresh_token: str) -> None:
        answer = self._send("DELETE", f"/oauth/v1/refresh-tokens/{quote(refresh_token, safe='')}")
        if answer.status_code not in (200, 204, 404):  # 404: already unknown, so revoked
            self._json(answer, "refresh token revocation")

    def close(self) -> None:
        self._http.close()

    def _grant(self, form: dict[str, str], redirect_uri: str | None = None) -> CrmTokens:
        form = {**form, "client_id": self._id, "client_secret": self._secret}
        if redirect_uri is not None:
            form["redirect_uri"] = redirect_uri
        body = self._json(self._send("POST", "/oauth/v1/token", data=form), "token grant")
        try:
            return CrmTokens(
                str(body["access_token"]), str(body["refresh_token"]), int(body["expires_in"])
            )
        except (KeyError, TypeError, ValueError):
            raise ProviderError("HubSpot's token answer lacks a token or its lifetime") from None

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.TransportError as error:
            raise ProviderUnavailable(
                f"HubSpot's OAuth could not be reached ({type(error).__name__})"
            ) from None

    def _json(self, answer: httpx.Response, what: str) -> dict[str, Any]:
        try:
            body = answer.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if 200 <= answer.status_code < 300:
            return body
        status = str(body.get("status") or body.get("category") or "")[:60]
        if answer.status_code == 429 or answer.status_code >= 500:
            raise ProviderUnavailable(
                f"HubSpot's {what} answered {answer.status_code}",
                retry_after=retry_after_seconds(answer.headers),
                reason=status,
            )
        if status in _OURS:
            raise ConfigError(
                f"HubSpot refused the app's {what} ({status}): check COLONY_HUBSPOT_CLIENT_ID,"
                " COLONY_HUBSPOT_CLIENT_SECRET and COLONY_HUBSPOT_REDIRECT_URI"
            )
        raise CrmAccessRefused(
            f"HubSpot refused the {what} ({answer.status_code} {status})", reason=status
        )


def hubspot_oauth(settings: Settings) -> HubSpotOAuth:
    """The app's OAuth, from the settings; ``ConfigError`` naming what is missing."""
    missing = [
        name
        for name, value in (
            ("COLONY_HUBSPOT_CLIENT_ID", settings.hubspot_client_id),
            ("COLONY_HUBSPOT_CLIENT_SECRET", settings.hubspot_client_secret),
            ("COLONY_HUBSPOT_REDIRECT_URI", settings.hubspot_redirect_uri),
        )
        if not value
    ]
    if missing:
        raise ConfigError(f"{', '.join(missing)} must be set to connect HubSpot")
    assert settings.hubspot_client_id and settings.hubspot_client_secret
    return HubSpotOAuth(
        settings.hubspot_client_id,
        settings.hubspot_client_secret,
        base_url=settings.hubspot_base_url or API_URL,
        authorize_url=settings.hubspot_auth_url or AUTHORIZE_URL,
    )
