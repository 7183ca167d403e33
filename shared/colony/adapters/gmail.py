"""``colony.ports.MailboxApi`` for an org's Google Workspace mailbox: Gmail's
``users.messages.send`` (the message as RFC 822 bytes, base64url, in ``raw``; a follow-up
names the first message's ``threadId``), Google's OAuth 2.0 for web server apps (the
``authorization_code`` and ``refresh_token`` grants at ``/token``, ``/revoke``), and the
OpenID Connect userinfo endpoint for whose mailbox a grant is (its ``email``).

Scopes: ``gmail.send`` (send only: the app reads no mail) and ``openid email`` (the proof
of the address). ``access_type=offline`` with ``prompt=consent`` makes Google hand out a
refresh token on every connection, not only the first. Google's error body is
``{"error": {"code", "message", "status", "errors": [{"reason", "domain"}]}}``; its reason
(``rateLimitExceeded``, ``insufficientPermissions``…) sorts it (``mailbox_http``). Gmail
does not DKIM-sign what we give it: it signs with the key the org set up in Workspace.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any, Final
from urllib.parse import quote, urlencode

from colony.adapters.mail_wire import wire
from colony.adapters.mailbox_http import MailboxHttp
from colony.errors import ConfigError, GrantRefused, ProviderError
from colony.ports import Mail, MailboxTokens, SentRef
from colony.settings import Settings
from colony.settings_mailboxes import MailboxApps

SCOPES = ("https://www.googleapis.com/auth/gmail.send", "openid", "email")


class GmailApi(MailboxHttp):
    kind: Final = "gmail"
    provider = "Gmail"
    grant_codes = frozenset({"insufficientPermissions", "authError", "UNAUTHENTICATED"})
    busy_codes = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "backendError"})

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        api_url: str,
        oauth_url: str,
        authorize_url: str,
        userinfo_url: str,
        timeout: float = 20.0,
    ) -> None:
        super().__init__(timeout=timeout)
        self._id, self._secret = client_id, client_secret
        self._api, self._oauth = api_url.rstrip("/"), oauth_url.rstrip("/")
        self._authorize, self._userinfo = authorize_url, userinfo_url

    def authorize_url(self, state: str, redirect_uri: str, login_hint: str) -> str:
        query = {
            "client_id": self._id,
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "scope": " ".join(SCOPES),
            "access_type": "offline",
            "prompt": "consent",
            "login_hint": login_hint,
            "state": state,
        }
        return f"{self._authorize}?{urlencode(query, quote_via=quote)}"

    def exchange_code(self, code: str, redirect_uri: str) -> MailboxTokens:
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        return self.grant(f"{self._oauth}/token", {**form, **self._client()}, "code")

    def refresh(self, refresh_token: str) -> MailboxTokens:
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        return self.grant(f"{self._oauth}/token", {**form, **self._client()}, "refresh token")

    def address(self, access_token: str) -> str:
        answer = self.request("GET", self._userinfo, headers=_bearer(access_token))
        body = self.answer(answer, "userinfo")
        if not body.get("email") or body.get("email_verified") is False:
            raise GrantRefused("Google's userinfo names no verified address", reason="no_email")
        return str(body["email"]).lower()

    def send(self, access_token: str, mail: Mail, thread: str | None = None) -> SentRef:
        raw = wire(replace(mail, dkim=None))  # the provider signs with the org's key there
        payload: dict[str, Any] = {"raw": base64.urlsafe_b64encode(raw).decode("ascii")}
        if thread:
            payload["threadId"] = thread
        url = f"{self._api}/gmail/v1/users/me/messages/send"
        body = self.answer(
            self.request("POST", url, json=payload, headers=_bearer(access_token)), "send"
        )
        if "id" not in body:
            raise ProviderError("Gmail's send answer names no message id")
        return SentRef(str(body["id"]), str(body.get("threadId") or "") or None)

    def revoke(self, refresh_token: str) -> None:
        answer = self.request("POST", f"{self._oauth}/revoke", data={"token": refresh_token})
        if answer.status_code != 400:  # 400 invalid_token: already unknown, so revoked
            self.answer(answer, "revocation")

    def code(self, body: dict[str, Any]) -> str:
        error = body.get("error")
        if isinstance(error, dict):
            reasons = [e.get("reason") for e in error.get("errors") or [] if isinstance(e, dict)]
            return str(next((r for r in reasons if r), None) or error.get("status") or "")
        return str(error or "")

    def _client(self) -> dict[str, str]:
        return {"client_id": self._id, "client_secret": self._secret}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def gmail_from_settings(settings: Settings) -> GmailApi:
    """Google's app from the settings; ``ConfigError`` naming what is missing."""
    apps: MailboxApps = settings.mailbox_apps
    if not apps.google_client_id or not apps.google_client_secret:
        raise ConfigError(
            "COLONY_GOOGLE_MAIL_CLIENT_ID and COLONY_GOOGLE_MAIL_CLIENT_SECRET must be set to"
            " connect Google Workspace mailboxes"
        )
    return GmailApi(
        apps.google_client_id,
        apps.google_client_secret,
        api_url=apps.gmail_api_url,
        oauth_url=apps.google_oauth_url,
        authorize_url=apps.google_authorize_url,
        userinfo_url=apps.google_userinfo_url,
    )
