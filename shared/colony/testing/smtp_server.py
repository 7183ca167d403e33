"""A real SMTP server on 127.0.0.1 (``aiosmtpd``): the stand-in the sender is tested against.

It speaks SMTP as a relay would: EHLO, optional STARTTLS (with a self-signed certificate
written for it, so a client can verify it), optional AUTH LOGIN/PLAIN, and replies 550 to a
recipient whose mailbox starts with ``bounce`` and 451 to one that starts with ``defer``
(scripted permanent and transient refusals); ``answer(address, "421 4.7.0 …", …)`` scripts the
next replies to one recipient's RCPT, one per attempt (then it is accepted), so a test can
have a mailbox refuse for now twice and take the third try, or answer 550 5.1.1, 452 4.2.2,
550 5.7.1 as a real server would. Every accepted message is kept as received:
envelope, raw bytes and the parsed message. Given a way to read DNS (``dkim_dns``: the TXT
records at a name, e.g. ``DnsPythonResolver(...).txt`` pointed at
``colony.testing.dns_server``), it verifies each message's DKIM signature with ``dkimpy`` as
a receiving server does, and keeps the verdict (``Received.dkim``).
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import ssl
import tempfile
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from pathlib import Path
from typing import Any, Self

import dkim
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from colony.testing.certs import self_signed
from colony.testing.loopback import HOST, reserve


@dataclass(frozen=True, slots=True)
class Received:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    raw: bytes
    message: EmailMessage
    tls: bool
    login: str | None
    # the DKIM verdict (None: the server was given no DNS to verify with, or no signature)
    dkim: bool | None = None


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self._server = server

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: Any
    ) -> str:
        scripted = self._server._scripted(address)
        if scripted is not None:
            return scripted
        mailbox = address.split("@", 1)[0].lower()
        if mailbox.startswith("bounce"):
            return "550 5.1.1 no such mailbox"
        if mailbox.startswith("defer"):
            return "451 4.3.0 try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = bytes(envelope.original_content or envelope.content)
        parsed = message_from_bytes(raw, policy=default)
        login = session.auth_data.login.decode() if session.auth_data else None
        received = Received(
            envelope.mail_from,
            tuple(envelope.rcpt_tos),
            raw,
            parsed,  # policy=default parses to EmailMessage
            session.ssl is not None,
            login,
            self._server._verify(raw, parsed),
        )
        self._server._keep(received)
        return "250 2.0.0 accepted"


class _ServingSocket(Controller):
    """aiosmtpd's threaded controller, serving a socket bound beforehand instead of binding
    ``hostname:port`` itself: bound as port 0, it cannot have been taken in between
    (``colony.testing.loopback``). ``_create_server`` is the hook aiosmtpd's controllers
    override to listen; it must hand connections to ``_factory_invoker``."""

    def __init__(self, handler: _Handler, sock: socket.socket, **params: Any) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(handler, hostname=host, port=port, **params)
        self._sock = sock

    def _create_server(self) -> Awaitable[asyncio.AbstractServer]:
        return self.loop.create_server(self._factory_invoker, sock=self._sock, ssl=self.ssl_context)


class SmtpServer:
    """``SmtpServer(starttls=True, credentials=("user", "secret"))`` as a context manager;
    ``host``, ``port`` (once started), ``ca_file`` (the certificate to trust) and
    ``received``."""

    host = HOST

    def __init__(
        self,
        *,
        starttls: bool = False,
        credentials: tuple[str, str] | None = None,
        dkim_dns: Callable[[str], list[str]] | None = None,
    ):
        self._dkim_dns = dkim_dns
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._credentials = credentials
        self._unsubscribe_key = secrets.token_urlsafe(32)
        self._dir = tempfile.TemporaryDirectory(prefix="colony-smtp-")
        self.ca_file: str | None = None
        self._params: dict[str, Any] = {}
        if starttls:
            self.ca_file, context = _certificate(Path(self._dir.name))
            self._params.update(tls_context=context, require_starttls=True)
        if credentials is not None:
            self._params.update(
                authenticator=self._authenticate, auth_required=True, auth_require_tls=starttls
            )
        self._controller: _ServingSocket | None = None
        self._answers: dict[str, list[str]] = {}
        self.attempts: dict[str, int] = {}  # RCPTs per recipient (lower-cased), answered or not

    def answer(self, address: str, *replies: str) -> None:
        """Answer the next RCPTs to ``address`` with ``replies`` (``"451 4.3.0 later"``), one
        per attempt, in order; once they are used up the recipient is accepted."""
        for reply in replies:
            if not (reply[:3].isdigit() and reply[0] in "45"):
                raise ValueError(f"a scripted refusal is a 4xx or 5xx reply, not {reply!r}")
        with self._lock:
            self._answers.setdefault(address.lower(), []).extend(replies)

    def _scripted(self, address: str) -> str | None:
        with self._lock:
            key = address.lower()
            self.attempts[key] = self.attempts.get(key, 0) + 1
            queued = self._answers.get(key)
            return queued.pop(0) if queued else None

    @property
    def port(self) -> int:
        if self._controller is None:
            raise RuntimeError("SmtpServer is not running")
        return int(self._controller.port)

    def _authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if not isinstance(auth_data, LoginPassword) or self._credentials is None:
            return AuthResult(success=False, handled=False)
        given = (auth_data.login.decode(), auth_data.password.decode())
        if given != self._credentials:
            return AuthResult(success=False, handled=False)  # aiosmtpd answers 535
        return AuthResult(success=True, auth_data=auth_data)

    def _verify(self, raw: bytes, parsed: EmailMessage) -> bool | None:
        if self._dkim_dns is None or "DKIM-Signature" not in parsed:
            return None
        return dkim_verifies(raw, self._dkim_dns)

    def _keep(self, received: Received) -> None:
        with self._lock:
            self._received.append(received)

    def env(self, mail_from: str = "Colony <outreach@colony.localhost>") -> dict[str, str]:
        """The settings that send through this server (plain: its STARTTLS variant is for the
        adapter's own tests), with a fresh unsubscribe-link key."""
        return {
            "COLONY_SMTP_HOST": self.host,
            "COLONY_SMTP_PORT": str(self.port),
            "COLONY_SMTP_STARTTLS": "false",
            "COLONY_MAIL_FROM": mail_from,
            "COLONY_UNSUBSCRIBE_TOKEN_KEY": self._unsubscribe_key,
        }

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def start(self) -> Self:
        sock = reserve(self.host)  # once served, asyncio's server owns it and closes it
        controller = _ServingSocket(_Handler(self), sock, **self._params)
        try:
            controller.start()
        except BaseException:
            sock.close()
            raise
        self._controller = controller
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None
        self._dir.cleanup()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def dkim_verifies(raw: bytes, lookup: Callable[[str], list[str]]) -> bool:
    """Whether the message's (first) DKIM signature verifies against what ``lookup`` (the
    TXT records at a name) publishes, as a receiving server checks it (dkimpy)."""

    def txt(name: bytes, timeout: int = 5) -> bytes | None:
        records = lookup(name.decode("ascii").rstrip("."))
        return records[0].encode() if records else None

    return bool(dkim.verify(raw, dnsfunc=txt))


def _certificate(root: Path) -> tuple[str, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1 and the server context that presents it."""
    cert_file, key_file = self_signed(root, "smtp")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return str(cert_file), context
