"""The ``Mailbox`` port over IMAP (standard library ``imaplib``): the mailbox that replies to
an SMTP relay's messages land in (a Google Workspace inbox, any provider's IMAP endpoint).

One connection per poll: ``unread`` logs in, selects the folder, and fetches every unseen
message with ``BODY.PEEK[]`` (peeking: reading does not mark it); ``mark_read`` sets ``\\Seen``
once the message is dealt with, so a crash in between reads it again (and ingesting it is
idempotent). TLS (``IMAP4_SSL``, the server's certificate verified) unless turned off for a
local server. Errors: a refused login is ``ConfigError``; anything else on the wire is
``UpstreamError`` (poll again later).

A bounce returned by mail (a delivery status notification, RFC 3464: ``multipart/report;
report-type=delivery-status``) lands in the same mailbox. It is read as a ``DeliveryReport``
(the first recipient's ``Action``, ``Status`` and the codes of its ``Diagnostic-Code``, and the
returned message's Message-ID from its ``text/rfc822-headers`` or ``message/rfc822`` part),
so the replies flow files it as a bounce by its codes, never as a reply.
"""

from __future__ import annotations

import imaplib
import ssl
from email import message_from_bytes, policy
from email.message import EmailMessage, Message
from email.parser import HeaderParser
from email.utils import parsedate_to_datetime

from colony.errors import ConfigError, UpstreamError
from colony.policy.bounces import parse
from colony.ports import DeliveryReport, InboundMail
from colony.settings import Settings

MAX_MESSAGES = 200  # per poll: a flooded mailbox is worked through over several polls
MAX_BYTES = 2_000_000  # one reply; a larger message is not a reply worth storing whole


def mailbox_from_settings(settings: Settings) -> ImapMailbox | None:
    """The deployment's reply mailbox (``COLONY_REPLY_MAILBOX_*``); None when none is set."""
    if not settings.reply_mailbox_host:
        return None
    if not settings.reply_mailbox_username or not settings.reply_mailbox_password:
        raise ConfigError(
            "COLONY_REPLY_MAILBOX_HOST is set: COLONY_REPLY_MAILBOX_USERNAME and"
            " COLONY_REPLY_MAILBOX_PASSWORD are required too"
        )
    return ImapMailbox(
        settings.reply_mailbox_host,
        settings.reply_mailbox_port,
        username=settings.reply_mailbox_username,
        password=settings.reply_mailbox_password,
        tls=settings.reply_mailbox_tls,
        folder=settings.reply_mailbox_folder,
    )


class ImapMailbox:
    def __init__(
        self,
        host: str,
        port: int = 993,
        *,
        username: str,
        password: str,
        tls: bool = True,
        ca_file: str | None = None,
        folder: str = "INBOX",
        timeout: float = 20.0,
    ) -> None:
        if not host or not username or not password:
            raise ConfigError("an IMAP mailbox needs a host, a username and a password")
        self._host, self._port, self._timeout = host, port, timeout
        self._username, self._password, self._folder = username, password, folder
        self._tls = ssl.create_default_context(cafile=ca_file) if tls else None

    def _connect(self) -> imaplib.IMAP4:
        try:
            if self._tls is not None:
                imap: imaplib.IMAP4 = imaplib.IMAP4_SSL(
                    self._host, self._port, ssl_context=self._tls, timeout=self._timeout
                )
            else:
                imap = imaplib.IMAP4(self._host, self._port, timeout=self._timeout)
        except (OSError, imaplib.IMAP4.error) as error:
            raise UpstreamError(f"cannot reach the IMAP server: {type(error).__name__}") from None
        try:
            imap.login(self._username, self._password)
        except imaplib.IMAP4.error:
            imap.shutdown()
            raise ConfigError(f"the IMAP server {self._host} refused our login") from None
        return imap

    def unread(self) -> list[tuple[str, InboundMail]]:
        imap = self._connect()
        try:
            imap.select(self._folder)
            status, data = imap.uid("SEARCH", "UNSEEN")
            if status != "OK":
                raise UpstreamError("the IMAP server refused the search")
            uids = (data[0] or b"").split()[:MAX_MESSAGES]
            found = []
            for uid in uids:
                status, parts = imap.uid("FETCH", uid.decode(), "(BODY.PEEK[])")
                raw = next((p[1] for p in parts if isinstance(p, tuple)), None)
                if status == "OK" and isinstance(raw, bytes) and len(raw) <= MAX_BYTES:
                    found.append((uid.decode(), inbound(raw)))
            imap.logout()
            return found
        except (OSError, imaplib.IMAP4.error) as error:
            imap.shutdown()
            raise UpstreamError(f"the IMAP exchange failed: {type(error).__name__}") from None

    def mark_read(self, key: str) -> None:
        imap = self._connect()
        try:
            imap.select(self._folder)
            imap.uid("STORE", key, "+FLAGS", "(\\Seen)")
            imap.logout()
        except (OSError, imaplib.IMAP4.error) as error:
            imap.shutdown()
            raise UpstreamError(f"the IMAP exchange failed: {type(error).__name__}") from None


def inbound(raw: bytes) -> InboundMail:
    """A received RFC 5322 message as the port's ``InboundMail`` (its plain-text part)."""
    message = message_from_bytes(raw, policy=policy.default)
    assert isinstance(message, EmailMessage)
    body = message.get_body(preferencelist=("plain",))
    try:
        text = body.get_content() if body is not None else ""
    except (LookupError, ValueError):  # an unknown charset: the reply is unreadable
        text = ""
    received = None
    if message["Date"]:
        try:
            received = parsedate_to_datetime(str(message["Date"]))
        except (TypeError, ValueError):
            received = None
    return InboundMail(
        message_id=str(message["Message-ID"] or "").strip(),
        sender=str(message["From"] or ""),
        subject=str(message["Subject"] or ""),
        text=str(text),
        in_reply_to=str(message["In-Reply-To"] or "").strip() or None,
        references=tuple(str(message["References"] or "").split()),
        received_at=received,
        report=delivery_report(message),
    )


def delivery_report(message: EmailMessage) -> DeliveryReport | None:
    """The report a delivery status notification makes (None: the message is not one)."""
    if message.get_content_type() != "multipart/report":
        return None
    if str(message.get_param("report-type") or "").lower() != "delivery-status":
        return None
    fields: list[Message] = []
    original = None
    for part in message.walk():
        kind = part.get_content_type()
        if kind == "message/delivery-status":
            payload = part.get_payload()
            fields = (
                [f for f in payload if isinstance(f, Message)] if isinstance(payload, list) else []
            )
        elif kind == "text/rfc822-headers" and original is None:
            raw = part.get_payload(decode=True)
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else ""
            original = HeaderParser().parsestr(text)
        elif kind == "message/rfc822" and original is None:
            inner = part.get_payload()
            first = inner[0] if isinstance(inner, list) and inner else None
            original = first if isinstance(first, Message) else None
    recipient = next((f for f in fields if f.get("Action")), None)  # per-recipient fields
    if recipient is None:
        return None
    smtp, status = parse(
        f"{recipient.get('Diagnostic-Code') or ''} {recipient.get('Status') or ''}"
    )
    explicit = parse(str(recipient.get("Status") or ""))[1]
    found = str(original.get("Message-ID") or "").strip() if original is not None else ""
    return DeliveryReport(
        action=str(recipient.get("Action") or "").strip().lower()[:20],
        status=explicit or status,
        smtp=smtp,
        original_message_id=found or None,
    )
