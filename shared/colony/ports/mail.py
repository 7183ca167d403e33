"""Mail: a message we send (``Mail``, handed to a ``Sender``, signed with its ``DkimKey``), and
the replies we receive (``InboundMail``, read from a provider's ``ReceivedMail`` or a polled
``Mailbox``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parseaddr
from typing import Protocol, runtime_checkable

from colony.errors import UpstreamError, ValidationFailed


@dataclass(frozen=True, slots=True)
class DkimKey:
    """What signs a message for ``domain`` (RFC 6376): the selector its public key is
    published under (``<selector>._domainkey.<domain>``) and the private key, PEM. The key
    comes from the secret store for one send and goes nowhere else: never logged, never
    printed (``repr`` leaves it out), never stored beside the message."""

    domain: str
    selector: str
    private_key: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Mail:
    """One message to one recipient. ``message_id`` (``<local@domain>``) is ours and
    deterministic per outbox row, so a retry after a crash sends the same message again, as
    the receiving side can tell. ``headers`` are extra header fields (``List-Unsubscribe``…)."""

    message_id: str
    sender: str
    to: str
    subject: str
    text: str
    headers: Mapping[str, str] = field(default_factory=dict)
    # What a provider API echoes back in its events (``org_id``, ``outbox_id``), never a
    # header the recipient sees; SMTP has no such thing and ignores them.
    tags: Mapping[str, str] = field(default_factory=dict)
    # The org's key for the From address's domain (a verified sending domain): a sender that
    # hands over the message as bytes signs it (SMTP); None: the message goes unsigned.
    dkim: DkimKey | None = None

    def __post_init__(self) -> None:
        if not (self.message_id.startswith("<") and self.message_id.endswith(">")):
            raise ValidationFailed("a Message-ID is written <local@domain>")
        for value in (self.sender, self.to, self.subject, *self.headers.values()):
            if "\r" in value or "\n" in value:
                raise ValidationFailed("header values cannot contain line breaks")
        if self.dkim is not None:
            # DMARC passes on DKIM only when d= is the From domain or (relaxed) a parent of it
            domain = parseaddr(self.sender)[1].rpartition("@")[2].lower()
            signing = self.dkim.domain.lower()
            if domain != signing and not domain.endswith(f".{signing}"):
                raise ValidationFailed(
                    f"a message from {domain!r} cannot be signed for {self.dkim.domain!r}"
                )


class MailRejected(ValidationFailed):
    """The mail server refused this message for good (an unknown mailbox, a policy block):
    sending it again cannot succeed. A transient refusal is ``MailDeferred`` instead.
    ``smtp`` and ``status`` are the server's reply code and enhanced status code (RFC 3463)
    where it gave them (``colony.policy.bounces`` classifies them); never its reply text."""

    code = "mail_rejected"

    def __init__(self, message: str, *, smtp: int | None = None, status: str | None = None):
        super().__init__(message)
        self.smtp, self.status = smtp, status


class MailDeferred(UpstreamError):
    """The mail server refused this message for now (421, 451, a full mailbox: a 4xx about
    the message or its recipient, not an unreachable server): it is tried again later, and
    an address that keeps refusing is suppressed. ``smtp`` / ``status`` as ``MailRejected``."""

    code = "mail_deferred"

    def __init__(self, message: str, *, smtp: int | None = None, status: str | None = None):
        super().__init__(message)
        self.smtp, self.status = smtp, status


@dataclass(frozen=True, slots=True)
class DeliveryReport:
    """What a delivery status notification (RFC 3464, ``multipart/report;
    report-type=delivery-status``) says of the message it returns: its first recipient's
    ``action`` (``failed``, ``delayed``, ``delivered``…), the enhanced ``status`` and the
    reply code from its ``Diagnostic-Code`` (codes only, never the text), and the returned
    message's Message-ID (from its headers, when the report carries them)."""

    action: str
    status: str | None = None
    smtp: int | None = None
    original_message_id: str | None = None


@dataclass(frozen=True, slots=True)
class InboundMail:
    """A message someone sent us (a reply, we hope): untrusted from header to body. ``text``
    is the plain-text body as received, quoted history included; ``in_reply_to`` and
    ``references`` are the Message-IDs it answers (``<local@domain>``, as written).
    ``report``: set when the message is a delivery status notification (a bounce returned by
    mail), which is never a reply."""

    message_id: str
    sender: str
    subject: str
    text: str
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    received_at: datetime | None = None
    report: DeliveryReport | None = None


@runtime_checkable
class ReceivedMail(Protocol):
    """Reads one inbound message a provider holds for us (its inbound webhook names it, and
    carries no body); ``NotFound`` when the provider has no such message."""

    def received(self, email_id: str) -> InboundMail: ...


@runtime_checkable
class Mailbox(Protocol):
    """A mailbox replies land in (for SMTP relay users: no provider webhook), polled: the
    unread messages as (key, message), and ``mark_read`` once one is dealt with, so a crash
    before it reads the message again (ingesting it is idempotent)."""

    def unread(self) -> list[tuple[str, InboundMail]]: ...

    def mark_read(self, key: str) -> None: ...


@runtime_checkable
class Sender(Protocol):
    """Hands one message to a mail server. Returns when the server has accepted it (the only
    moment we know it will be delivered or bounced by someone else); raises ``MailRejected``
    for a permanent refusal, ``MailDeferred`` for a transient refusal of this message, and
    ``UpstreamError`` when the server cannot be reached (retry later)."""

    def send(self, mail: Mail) -> None: ...
