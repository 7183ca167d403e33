"""A local stand-in for Microsoft Graph's mail API and the Microsoft identity platform,
speaking their wire formats: ``POST /v1.0/me/sendMail`` with a MIME body (base64 RFC 822,
``Content-Type: text/plain``) → 202 with no body, ``GET /v1.0/me`` (``mail``,
``userPrincipalName``), ``POST /{tenant}/oauth2/v2.0/token`` (form-encoded grants;
``invalid_grant`` with an ``AADSTS`` description for a revoked refresh token) and the consent
page ``GET /{tenant}/oauth2/v2.0/authorize`` (``colony.testing.mail_accounts``).

Errors are Graph's: ``{"error": {"code", "message", "innerError": {...}}}``; 401
``InvalidAuthenticationToken`` for an access token it does not know, 429
``ApplicationThrottled`` with ``Retry-After`` when scripted (``rate_limit``), 400
``ErrorMimeContentInvalid`` for a body that is not base64 MIME. Exchange threads a message
by its ``In-Reply-To`` / ``References``: ``conversation`` names each accepted message's
conversation the way Exchange would (the Message-ID that started it).
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

from colony.testing.mail_accounts import CLIENT_ID, CLIENT_SECRET, Delivered, MailAccounts
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route

_TENANT = r"(?P<tenant>[A-Za-z0-9.-]+)"


def graph_error(status: int, code: str, message: str) -> Reply:
    inner = {"date": datetime.now(UTC).isoformat(), "request-id": "stand-in"}
    return Reply(status, {"error": {"code": code, "message": message, "innerError": inner}})


class GraphServer(ProviderServer):
    """Graph and Microsoft's login on 127.0.0.1; ``accounts`` holds its mailboxes and mail."""

    unauthorised = ("InvalidAuthenticationToken", "Access token is empty or invalid.")
    rate_limited = ("ApplicationThrottled", "Application is over its MailboxConcurrency limit.")

    def __init__(self, relay: tuple[str, int] | None = None) -> None:
        self.accounts = MailAccounts(relay)
        super().__init__(
            routes=[
                Route.of(
                    "ms.authorize",
                    "GET",
                    rf"/{_TENANT}/oauth2/v2.0/authorize",
                    self.accounts.consent,
                ),
                Route.of("ms.token", "POST", rf"/{_TENANT}/oauth2/v2.0/token", self._token),
                Route.of("graph.me", "GET", r"/v1.0/me", self._me),
                Route.of("graph.sendMail", "POST", r"/v1.0/me/sendMail", self._send),
            ]
        )

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        return graph_error(status, code, message)

    @property
    def sent(self) -> list[Delivered]:
        return list(self.accounts.delivered)

    def conversation(self, delivered: Delivered) -> str:
        """The conversation Exchange files ``delivered`` under: the first Message-ID of its
        References (its own when it starts one)."""
        references = str(delivered.message.get("References") or "").split()
        return references[0] if references else str(delivered.message["Message-ID"])

    def _token(self, request: RecordedRequest) -> Reply:
        reply = self.accounts.token(request)
        if reply.status == 400 and isinstance(reply.body, dict):
            reply = Reply(
                400,
                {
                    **reply.body,
                    "error_description": "AADSTS70008: The provided authorization code or"
                    " refresh token has expired due to inactivity or was revoked.",
                    "error_codes": [70008],
                },
            )
        return reply

    def _me(self, request: RecordedRequest) -> Reply:
        mailbox = self.accounts.mailbox_of(request)
        if mailbox is None:
            return self.provider_error(401, *self.unauthorised)
        return Reply(
            200, {"id": str(abs(hash(mailbox))), "mail": mailbox, "userPrincipalName": mailbox}
        )

    def _send(self, request: RecordedRequest) -> Reply:
        mailbox = self.accounts.mailbox_of(request)
        if mailbox is None:
            return self.provider_error(401, *self.unauthorised)
        if not (request.header("content-type") or "").startswith("text/plain"):
            return graph_error(400, "ErrorInvalidRequest", "Send MIME as text/plain base64.")
        try:
            raw = base64.b64decode(request.raw_body, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if not raw:
            return graph_error(400, "ErrorMimeContentInvalid", "Invalid base64 string for MIME.")
        accepted = self.accounts.accept(mailbox, raw, None)
        if isinstance(accepted, str):
            return graph_error(400, "ErrorSendAsDenied", accepted)
        return Reply(202, b"", {"Content-Type": "text/plain"})

    def env(self) -> dict[str, str]:
        """The settings that connect and send through this stand-in."""
        return {
            "COLONY_MICROSOFT_MAIL_CLIENT_ID": CLIENT_ID,
            "COLONY_MICROSOFT_MAIL_CLIENT_SECRET": CLIENT_SECRET,
            "COLONY_GRAPH_API_URL": self.base_url,
            "COLONY_MICROSOFT_LOGIN_URL": self.base_url,
        }
