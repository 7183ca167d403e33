"""``MemoryMailboxApi``: the ``MailboxApi`` port in memory, for flow tests that need no HTTP.
It answers only from what Gmail or Graph would see (the grant's tokens, the message, the
thread named), and ``tests/conformance/test_mailbox_api.py`` holds it to the same contract
as the real adapters on their stand-ins.

A test plays the person and the provider: ``host`` the mailboxes, ``consent`` to an
authorize URL (as its ``login_hint``, or as ``sign_in_as``), ``revoke`` a mailbox's grants,
``expire`` the access tokens, ``busy`` the next sends (429 with a wait).
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from email.utils import parseaddr
from urllib.parse import parse_qs, urlencode, urlsplit

from colony.errors import GrantRefused, ProviderUnavailable
from colony.ports import Mail, MailboxTokens, MailRejected, SentRef
from colony.ports.mailboxes import MailboxKind


@dataclass(frozen=True)
class MemorySent:
    mailbox: str
    id: str
    thread: str | None
    mail: Mail


class MemoryMailboxApi:
    def __init__(self, kind: MailboxKind = "gmail", expires_in: int = 3600) -> None:
        self.kind: MailboxKind = kind
        self.expires_in = expires_in
        self.mailboxes: set[str] = set()
        self.sign_in_as: str | None = None
        self.sent: list[MemorySent] = []
        self._codes: dict[str, str] = {}
        self._access: dict[str, str] = {}
        self._refresh: dict[str, str] = {}
        self._busy: list[float] = []
        self._lock = threading.Lock()

    # -- the test's side ---------------------------------------------------------------------

    def host(self, *addresses: str) -> None:
        self.mailboxes.update(a.lower() for a in addresses)

    def consent(self, authorize_url: str) -> tuple[str, str]:
        """The person consents: the ``code`` and ``state`` the redirect would carry."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(authorize_url).query).items()}
        who = (self.sign_in_as or query["login_hint"]).lower()
        if who not in self.mailboxes:
            raise AssertionError(f"no such account {who!r}")
        code = secrets.token_urlsafe(12)
        with self._lock:
            self._codes[code] = who
        return code, query["state"]

    def revoke_mailbox(self, mailbox: str) -> None:
        with self._lock:
            for table in (self._access, self._refresh):
                for token in [t for t, m in table.items() if m == mailbox.lower()]:
                    del table[token]

    def expire(self) -> None:
        with self._lock:
            self._access.clear()

    def busy(self, times: int = 1, retry_after: float = 1.0) -> None:
        with self._lock:
            self._busy.extend([retry_after] * times)

    # -- the port ----------------------------------------------------------------------------

    def authorize_url(self, state: str, redirect_uri: str, login_hint: str) -> str:
        query = urlencode({"state": state, "redirect_uri": redirect_uri, "login_hint": login_hint})
        return f"memory://{self.kind}/authorize?{query}"

    def exchange_code(self, code: str, redirect_uri: str) -> MailboxTokens:
        with self._lock:
            mailbox = self._codes.pop(code, None)
            if mailbox is None:
                raise GrantRefused("the code is not known", reason="invalid_grant")
            refresh = secrets.token_urlsafe(16)
            self._refresh[refresh] = mailbox
            return self._issue(mailbox, refresh)

    def refresh(self, refresh_token: str) -> MailboxTokens:
        with self._lock:
            mailbox = self._refresh.get(refresh_token)
            if mailbox is None:
                raise GrantRefused("the refresh token is revoked", reason="invalid_grant")
            return self._issue(mailbox, None)

    def _issue(self, mailbox: str, refresh: str | None) -> MailboxTokens:
        access = secrets.token_urlsafe(16)
        self._access[access] = mailbox
        return MailboxTokens(access, self.expires_in, refresh)

    def address(self, access_token: str) -> str:
        return self._mailbox(access_token)

    def send(self, access_token: str, mail: Mail, thread: str | None = None) -> SentRef:
        with self._lock:
            wait = self._busy.pop(0) if self._busy else None
        if wait is not None:
            raise ProviderUnavailable("busy", retry_after=wait, reason="rateLimitExceeded")
        mailbox = self._mailbox(access_token)
        if parseaddr(mail.sender)[1].lower() != mailbox:
            raise MailRejected("the From is not the signed-in mailbox")
        with self._lock:
            known = {s.thread for s in self.sent if s.mailbox == mailbox}
            if self.kind == "gmail" and thread is not None and thread not in known:
                raise MailRejected("the thread is not known")
            message_id = secrets.token_hex(8)
            own = (thread or message_id) if self.kind == "gmail" else None
            self.sent.append(MemorySent(mailbox, message_id, own, mail))
        return SentRef(message_id if self.kind == "gmail" else "", own)

    def revoke(self, refresh_token: str) -> None:
        if self.kind == "gmail":
            with self._lock:
                self._refresh.pop(refresh_token, None)

    def _mailbox(self, access_token: str) -> str:
        with self._lock:
            mailbox = self._access.get(access_token)
        if mailbox is None:
            raise GrantRefused("the access token is not known", reason="authError")
        return mailbox
