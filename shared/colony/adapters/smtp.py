"""The ``Sender`` port over SMTP (standard library ``smtplib``): a Google Workspace SMTP relay,
any provider's SMTP endpoint, or the local server ``make run`` starts.

One connection per message: a send is one durable step (``colony.flows.outbound.sending``), and a
function instance sends seldom enough that a pool would mostly hold idle sockets. STARTTLS is
required unless explicitly turned off (the local server only): credentials and bodies never
cross the network in clear. The server's certificate is verified (system roots, or
``ca_file``).

A message with a ``DkimKey`` (its org's verified sending domain) is signed over the bytes
that go on the wire (``colony.adapters.dkim``), so what the server receives is exactly what
was signed.

Refusals are sorted the way SMTP sorts them: a 5xx reply is permanent (``MailRejected``: do
not retry), a 4xx reply or a broken connection is transient (``UpstreamError``: retry), and a
refused login is our configuration's fault (``ConfigError``).
"""

from __future__ import annotations

import smtplib
import ssl
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate, parseaddr
from io import BytesIO

from colony.adapters.dkim import signed
from colony.errors import ConfigError, UpstreamError
from colony.ports import Mail, MailDeferred, MailRejected
from colony.settings import Settings


def sender_from_settings(settings: Settings) -> SmtpSender:
    """The relay the settings name (``COLONY_SMTP_*``)."""
    if not settings.smtp_host:
        raise ConfigError("COLONY_SMTP_HOST is required to send mail; set it in the environment")
    return SmtpSender(
        settings.smtp_host,
        settings.smtp_port,
        username=settings.smtp_username,
        password=settings.smtp_password,
        starttls=settings.smtp_starttls,
        ca_file=settings.smtp_ca_file,
    )


class SmtpSender:
    def __init__(
        self,
        host: str,
        port: int = 587,
        *,
        username: str | None = None,
        password: str | None = None,
        starttls: bool = True,
        ca_file: str | None = None,
        timeout: float = 20.0,
    ) -> None:
        if not host:
            raise ConfigError("COLONY_SMTP_HOST is required to send mail over SMTP")
        if username and not password:
            raise ConfigError("COLONY_SMTP_USERNAME is set without COLONY_SMTP_PASSWORD")
        if username and not starttls:
            raise ConfigError("SMTP credentials are never sent without STARTTLS")
        self._host, self._port, self._timeout = host, port, timeout
        self._username, self._password = username, password
        self._tls = ssl.create_default_context(cafile=ca_file) if starttls else None

    def send(self, mail: Mail) -> None:
        sender, recipient = parseaddr(mail.sender)[1], parseaddr(mail.to)[1]
        international = not (sender + recipient).isascii()  # RFC 6531 addresses
        raw = _wire(mail, international)
        try:
            with smtplib.SMTP(self._host, self._port, timeout=self._timeout) as smtp:
                smtp.ehlo()
                if self._tls is not None:
                    smtp.starttls(context=self._tls)
                    smtp.ehlo()
                if self._username:
                    smtp.login(self._username, self._password or "")
                options: tuple[str, ...] = ()
                if international:
                    if not smtp.has_extn("smtputf8"):
                        raise MailRejected("the SMTP server cannot carry this address (SMTPUTF8)")
                    options = ("SMTPUTF8", "BODY=8BITMIME")
                smtp.sendmail(sender, [recipient], raw, options)
        except smtplib.SMTPNotSupportedError:
            raise ConfigError(f"the SMTP server {self._host} does not offer STARTTLS") from None
        except smtplib.SMTPAuthenticationError as error:
            raise ConfigError(f"the SMTP server refused our login ({error.smtp_code})") from None
        except ssl.SSLCertVerificationError:
            raise ConfigError(
                f"the SMTP server {self._host}'s certificate does not verify"
            ) from None
        except smtplib.SMTPRecipientsRefused as error:
            code = min((c for c, _ in error.recipients.values()), default=550)
            _refused(code, "the recipient")
        except smtplib.SMTPResponseException as error:  # sender refused, data refused…
            _refused(error.smtp_code, "the message")
        except (smtplib.SMTPException, ssl.SSLError, OSError) as error:
            raise UpstreamError(f"cannot reach the SMTP server: {type(error).__name__}") from None


# 530 "must issue STARTTLS / authentication required", 535 "credentials invalid", 538
# "encryption required": the server refuses us, not the message — our configuration's fault.
_OURS = {530, 535, 538}


def _refused(code: int, what: str) -> None:
    if code in _OURS:
        raise ConfigError(f"the SMTP server refuses this connection's setup ({code})")
    if 500 <= code < 600:
        raise MailRejected(f"the SMTP server refused {what} for good ({code})")
    # A reply code, not a lost connection: the server did not take the message.
    raise MailDeferred(f"the SMTP server refused {what} for now ({code}); retry later")


def _wire(mail: Mail, international: bool) -> bytes:
    """The message's bytes as ``send_message`` would write them, signed when it has a key:
    signed before the connection opens, so a key that cannot sign fails before any SMTP."""
    message = _message(mail)
    policy = _INTERNATIONAL if international else _POLICY
    with BytesIO() as out:
        BytesGenerator(out, policy=policy).flatten(message, linesep="\r\n")
        raw = out.getvalue()
    return raw if mail.dkim is None else signed(raw, mail.dkim)


# RFC 5322 allows 998 characters a line: no folding of our one-line headers (Python folds a
# long Subject before its first word, which a reader then sees as a leading space).
_POLICY = SMTP.clone(max_line_length=998)
_INTERNATIONAL = _POLICY.clone(utf8=True)  # RFC 6531: headers in UTF-8, as SMTPUTF8 carries


def _message(mail: Mail) -> EmailMessage:
    message = EmailMessage(policy=_POLICY)
    message["Message-ID"] = mail.message_id
    message["Date"] = formatdate(usegmt=True)
    message["From"] = mail.sender
    message["To"] = mail.to
    message["Subject"] = mail.subject
    for name, value in mail.headers.items():
        message[name] = value
    message.set_content(mail.text)
    return message
