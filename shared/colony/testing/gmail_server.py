"""A local stand-in for Google's Gmail API and OAuth 2.0 endpoints, speaking their wire
formats: ``POST /gmail/v1/users/me/messages/send`` (``{"raw": base64url RFC 822,
"threadId"?}`` → ``{"id", "threadId", "labelIds"}``), ``POST /token`` (the
``authorization_code`` and ``refresh_token`` grants, form-encoded; ``invalid_grant`` for a
revoked refresh token), ``POST /revoke``, ``GET /v1/userinfo`` (OpenID Connect: ``email``)
and the consent page ``GET /o/oauth2/v2/auth`` (``colony.testing.mail_accounts``).

Errors are Google's: ``{"error": {"code", "message", "status", "errors": [{"reason",
"domain", "message"}]}}``; 401 ``authError`` for an access token it does not know (revoked,
lapsed), 429 ``rateLimitExceeded`` with ``Retry-After`` when scripted (``rate_limit``), 400
``invalidArgument`` for a message whose From is not the signed-in mailbox. A follow-up that
names a ``threadId`` joins that thread; one that names none starts a new one.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from colony.testing.mail_accounts import CLIENT_ID, CLIENT_SECRET, Delivered, MailAccounts
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route


def google_error(status: int, reason: str, message: str) -> Reply:
    names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
    names |= {404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}
    error = {"message": message, "domain": "global", "reason": reason}
    status_name = names.get(status, "INTERNAL")
    return Reply(
        status,
        {"error": {"code": status, "message": message, "errors": [error], "status": status_name}},
    )


class GmailServer(ProviderServer):
    """Gmail and Google's OAuth on 127.0.0.1; ``accounts`` holds its mailboxes and mail."""

    unauthorised = ("authError", "Request had invalid authentication credentials.")
    rate_limited = ("rateLimitExceeded", "User-rate limit exceeded.")

    def __init__(
        self,
        relay: tuple[str, int] | None = None,
        sign: Callable[[str, bytes], bytes] | None = None,
    ) -> None:
        self.accounts = MailAccounts(relay, sign=sign)
        super().__init__(
            routes=[
                Route.of("google.auth", "GET", r"/o/oauth2/v2/auth", self.accounts.consent),
                Route.of("google.token", "POST", r"/token", self.accounts.token),
                Route.of("google.revoke", "POST", r"/revoke", self._revoke),
                Route.of("google.userinfo", "GET", r"/v1/userinfo", self._userinfo),
                Route.of(
                    "gmail.messages.send",
                    "POST",
                    r"/gmail/v1/users/(?P<user>[^/]+)/messages/send",
                    self._send,
                ),
            ]
        )

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        return google_error(status, code, message)

    @property
    def sent(self) -> list[Delivered]:
        return list(self.accounts.delivered)

    def _revoke(self, request: RecordedRequest) -> Reply:
        token = request.raw_body.decode().partition("token=")[2].split("&")[0]
        if not self.accounts.revoke_token(token):
            return Reply(400, {"error": "invalid_token", "error_description": "Bad Request"})
        return Reply(200, {})

    def _userinfo(self, request: RecordedRequest) -> Reply:
        mailbox = self.accounts.mailbox_of(request)
        if mailbox is None:
            return self.provider_error(401, *self.unauthorised)
        return Reply(
            200, {"sub": str(abs(hash(mailbox))), "email": mailbox, "email_verified": True}
        )

    def _send(self, request: RecordedRequest) -> Reply:
        mailbox = self.accounts.mailbox_of(request)
        if mailbox is None:
            return self.provider_error(401, *self.unauthorised)
        if request.params["user"] not in ("me", mailbox):
            return google_error(403, "forbidden", "Delegation denied for this user.")
        body = request.body if isinstance(request.body, dict) else {}
        try:
            raw = base64.urlsafe_b64decode(str(body.get("raw") or ""))
        except (binascii.Error, ValueError):
            raw = b""
        if not raw:
            return google_error(400, "invalidArgument", "Invalid value for ByteString: raw")
        thread = body.get("threadId")
        known = {d.thread for d in self.accounts.delivered if d.mailbox == mailbox}
        if thread is not None and thread not in known:  # threads are per mailbox
            return google_error(404, "notFound", "Requested entity was not found.")
        accepted = self.accounts.accept(mailbox, raw, thread, threads=True)
        if isinstance(accepted, str):
            return google_error(400, "invalidArgument", accepted)
        return Reply(200, {"id": accepted.id, "threadId": accepted.thread, "labelIds": ["SENT"]})

    def env(self) -> dict[str, str]:
        """The settings that connect and send through this stand-in."""
        return {
            "COLONY_GOOGLE_MAIL_CLIENT_ID": CLIENT_ID,
            "COLONY_GOOGLE_MAIL_CLIENT_SECRET": CLIENT_SECRET,
            "COLONY_GMAIL_API_URL": self.base_url,
            "COLONY_GOOGLE_OAUTH_URL": self.base_url,
        }
