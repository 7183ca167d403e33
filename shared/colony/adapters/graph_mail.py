"""``colony.ports.MailboxApi`` for an org's Microsoft 365 mailbox: Graph's
``POST /v1.0/me/sendMail`` with the message as MIME (``Content-Type: text/plain``, the RFC 822
bytes base64-encoded), the Microsoft identity platform's OAuth 2.0 authorization code flow
(``/{tenant}/oauth2/v2.0/authorize`` and ``/token``), and ``GET /v1.0/me`` for whose mailbox a
grant is (``mail``, else ``userPrincipalName``).

MIME, not Graph's JSON message: the JSON form can set only ``x-`` headers, and a follow-up
must carry our ``Message-ID``, ``In-Reply-To`` and ``References`` for Exchange (and the
recipient) to put it in the first message's conversation; Graph has no thread id to pass.
``sendMail`` answers 202 with no body, so the sent message is known by our Message-ID.

Scopes: ``Mail.Send``, ``User.Read`` (the address) and ``offline_access`` (a refresh token).
Graph's error body is ``{"error": {"code", "message"}}``: ``InvalidAuthenticationToken`` and
``ErrorAccessDenied`` are the grant's, ``ApplicationThrottled`` and ``MailboxConcurrency``
are busy signals (429 with ``Retry-After``). Microsoft has no endpoint that revokes one
app's refresh token: ``revoke`` forgets it here (the tokens are deleted from the secret
store), and the tenant's admin removes the app in Entra to end it there.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Final
from urllib.parse import quote, urlencode

from colony.adapters.mail_wire import wire
from colony.adapters.mailbox_http import MailboxHttp
from colony.errors import ConfigError, GrantRefused
from colony.ports import Mail, MailboxTokens, SentRef
from colony.settings import Settings

SCOPES = (
    "offline_access",
    "https://graph.microsoft.com/Mail.Send",
    "https://graph.microsoft.com/User.Read",
)


class GraphMailApi(MailboxHttp):
    kind: Final = "graph"
    provider = "Microsoft Graph"
    grant_codes = frozenset({"InvalidAuthenticationToken", "ErrorAccessDenied", "Forbidden"})
    busy_codes = frozenset({"ApplicationThrottled", "MailboxConcurrency", "ErrorServerBusy"})

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        api_url: str,
        login_url: str,
        tenant: str = "organizations",
        timeout: float = 20.0,
    ) -> None:
        super().__init__(timeout=timeout)
        self._id, self._secret = client_id, client_secret
        self._api = api_url.rstrip("/")
        self._login = f"{login_url.rstrip('/')}/{quote(tenant, safe='')}/oauth2/v2.0"

    def authorize_url(self, state: str, redirect_uri: str, login_hint: str) -> str:
        query = {
            "client_id": self._id,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "response_mode": "query",
            "scope": " ".join(SCOPES),
            "login_hint": login_hint,
            "state": state,
        }
        return f"{self._login}/authorize?{urlencode(query, quote_via=quote)}"

    def exchange_code(self, code: str, redirect_uri: str) -> MailboxTokens:
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        return self.grant(f"{self._login}/token", {**form, **self._client()}, "code")

    def refresh(self, refresh_token: str) -> MailboxTokens:
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        return self.grant(f"{self._login}/token", {**form, **self._client()}, "refresh token")

    def address(self, access_token: str) -> str:
        url = f"{self._api}/v1.0/me?$select=mail,userPrincipalName"
        body = self.answer(self.request("GET", url, headers=_bearer(access_token)), "profile")
        found = body.get("mail") or body.get("userPrincipalName")
        if not found:
            raise GrantRefused("Graph's profile names no address", reason="no_mail")
        return str(found).lower()

    def send(self, access_token: str, mail: Mail, thread: str | None = None) -> SentRef:
        raw = wire(replace(mail, dkim=None))  # the provider signs with the org's key there
        headers = {**_bearer(access_token), "Content-Type": "text/plain"}
        url = f"{self._api}/v1.0/me/sendMail"
        answer = self.request("POST", url, content=base64.b64encode(raw), headers=headers)
        self.answer(answer, "send")
        return SentRef("", None)  # 202, no body: the message is known by our Message-ID

    def revoke(self, refresh_token: str) -> None:
        return None  # nothing to call (module docstring): the caller deletes the tokens

    def _client(self) -> dict[str, str]:
        return {
            "client_id": self._id,
            "client_secret": self._secret,
            "scope": " ".join(SCOPES),
        }


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def graph_from_settings(settings: Settings) -> GraphMailApi:
    """Microsoft's app from the settings; ``ConfigError`` naming what is missing."""
    apps = settings.mailbox_apps
    if not apps.microsoft_client_id or not apps.microsoft_client_secret:
        raise ConfigError(
            "COLONY_MICROSOFT_MAIL_CLIENT_ID and COLONY_MICROSOFT_MAIL_CLIENT_SECRET must be"
            " set to connect Microsoft 365 mailboxes"
        )
    return GraphMailApi(
        apps.microsoft_client_id,
        apps.microsoft_client_secret,
        api_url=apps.graph_api_url,
        login_url=apps.microsoft_login_url,
        tenant=apps.microsoft_tenant,
    )
