"""What the Gmail and Graph stand-ins share: the mailboxes they host and the OAuth grants
given for them (codes, access tokens, refresh tokens, each revocable), the consent page
(the person is signed in as the ``login_hint`` mailbox, or as ``sign_in_as`` when a test
wants someone else to consent), and what they accepted: kept as sent (``Delivered``: the
raw bytes, the parsed message, the provider's thread) and, given an SMTP server, handed to
it as the provider's outbound relay would.
"""

from __future__ import annotations

import secrets
import smtplib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from email.utils import getaddresses, parseaddr
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from colony.testing.wire import RecordedRequest, Reply

CLIENT_ID, CLIENT_SECRET = "colony-mail-app", "colony-mail-app-secret"


@dataclass(frozen=True)
class Delivered:
    """One message a stand-in accepted from ``mailbox``."""

    mailbox: str
    id: str
    thread: str | None
    raw: bytes
    message: EmailMessage


class MailAccounts:
    """Mailboxes, grants and sent mail of one stand-in."""

    def __init__(
        self,
        relay: tuple[str, int] | None = None,
        expires_in: int = 3600,
        sign: Callable[[str, bytes], bytes] | None = None,
    ) -> None:
        self._sign = sign
        self.mailboxes: set[str] = set()
        self.sign_in_as: str | None = None  # consent given by this mailbox, whatever the hint
        self.expires_in = expires_in
        self.delivered: list[Delivered] = []
        self._relay = relay
        self._codes: dict[str, tuple[str, str]] = {}  # code -> (mailbox, redirect_uri)
        self._access: dict[str, str] = {}
        self._refresh: dict[str, str] = {}
        self._lock = threading.Lock()

    def host(self, *addresses: str) -> None:
        self.mailboxes.update(a.lower() for a in addresses)

    # -- OAuth -------------------------------------------------------------------------------

    def consent(self, request: RecordedRequest) -> Reply:
        """The authorize page: the person consents at once and is sent back with a code."""
        query = {k: v[0] for k, v in request.query.items()}
        if query.get("client_id") != CLIENT_ID or not query.get("redirect_uri"):
            return Reply(400, b"unknown client or no redirect_uri", {"Content-Type": "text/plain"})
        who = (self.sign_in_as or query.get("login_hint") or "").lower()
        if who not in self.mailboxes:
            return Reply(400, b"no such account", {"Content-Type": "text/plain"})
        code = secrets.token_urlsafe(18)
        with self._lock:
            self._codes[code] = (who, query["redirect_uri"])
        back = urlencode({"code": code, "state": query.get("state", "")})
        return Reply(302, b"", {"Location": f"{query['redirect_uri']}?{back}"})

    def token(self, request: RecordedRequest) -> Reply:
        form = {k: v[0] for k, v in parse_qs(request.raw_body.decode()).items()}
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return _oauth_error(401, "invalid_client", "The OAuth client was not found.")
        with self._lock:
            if form.get("grant_type") == "authorization_code":
                found = self._codes.pop(form.get("code", ""), None)
                if found is None or found[1] != form.get("redirect_uri"):
                    return _oauth_error(400, "invalid_grant", "Malformed auth code.")
                refresh = secrets.token_urlsafe(24)
                self._refresh[refresh] = found[0]
                return self._issue(found[0], refresh)
            if form.get("grant_type") == "refresh_token":
                mailbox = self._refresh.get(form.get("refresh_token", ""))
                if mailbox is None:
                    return _oauth_error(400, "invalid_grant", "Token has been expired or revoked.")
                return self._issue(mailbox, None)
        return _oauth_error(400, "unsupported_grant_type", "Invalid grant_type.")

    def _issue(self, mailbox: str, refresh: str | None) -> Reply:
        access = secrets.token_urlsafe(24)
        self._access[access] = mailbox
        body: dict[str, Any] = {
            "access_token": access,
            "expires_in": self.expires_in,
            "token_type": "Bearer",
            "scope": "mail.send",
        }
        if refresh:
            body["refresh_token"] = refresh
        return Reply(200, body)

    def revoke_token(self, token: str) -> bool:
        with self._lock:
            return self._refresh.pop(token, None) is not None

    def revoke(self, mailbox: str) -> None:
        """The mailbox's owner takes every grant back (a revoked app, a reset password)."""
        with self._lock:
            for table in (self._access, self._refresh):
                for token in [t for t, m in table.items() if m == mailbox.lower()]:
                    del table[token]

    def expire_access(self) -> None:
        """Every access token lapses (an hour passed): the next call needs a refresh."""
        with self._lock:
            self._access.clear()

    def mailbox_of(self, request: RecordedRequest) -> str | None:
        header = request.header("authorization") or ""
        with self._lock:
            return self._access.get(header.removeprefix("Bearer "))

    # -- mail --------------------------------------------------------------------------------

    def accept(
        self, mailbox: str, raw: bytes, thread: str | None, *, threads: bool = False
    ) -> Delivered | str:
        """Keep (and relay) a message sent from ``mailbox`` into ``thread`` (a new one of its
        own when ``threads`` and none is named); why not when it is refused."""
        message = message_from_bytes(raw, policy=default)
        assert isinstance(message, EmailMessage)
        sender = parseaddr(str(message.get("From", "")))[1].lower()
        if sender != mailbox:
            return f"From {sender!r} is not the signed-in mailbox"
        recipients = [a for _, a in getaddresses([str(v) for v in message.get_all("To", [])])]
        if not recipients:
            return "no recipient"
        message_id = secrets.token_hex(8)
        thread = thread or (message_id if threads else None)
        delivered = Delivered(mailbox, message_id, thread, raw, message)
        with self._lock:
            self.delivered.append(delivered)
        if self._relay is not None:
            relayed = self._sign(mailbox, raw) if self._sign is not None else raw
            with smtplib.SMTP(*self._relay, timeout=10) as smtp:
                smtp.sendmail(mailbox, recipients, relayed)
        return delivered


def _oauth_error(status: int, error: str, description: str) -> Reply:
    return Reply(status, {"error": error, "error_description": description})


def redirect_code(location: str) -> tuple[str, str]:
    """The ``code`` and ``state`` a consent page's redirect carries."""
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    return query["code"], query["state"]
