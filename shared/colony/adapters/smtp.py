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
not retry), a 4xx reply is transient (``MailDeferred``: the message is tried again later), a
broken connection is ``UpstreamError`` (retry), and a refused login is our configuration's
fault (``ConfigError``). A refusal carries its reply code and enhanced status code (``550``,
``5.1.1``; ``colony.policy.bounces.parse``), never the server's text, which can quote the
recipient.
"""

from __future__ import annotations

import smtplib
import ssl
from email.utils import parseaddr

from colony.adapters.mail_wire import wire
from colony.errors import ConfigError, UpstreamError
from colony.policy.bounces import parse
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
        raw = wire(mail, international=international)
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
            code, reply = min(error.recipients.values(), default=(550, b""))
            _refused(code, reply, "the recipient")
        except smtplib.SMTPResponseException as error:  # sender refused, data refused…
            _refused(error.smtp_code, error.smtp_error, "the message")
        except (smtplib.SMTPException, ssl.SSLError, OSError) as error:
            raise UpstreamError(f"cannot reach the SMTP server: {type(error).__name__}") from None


# 530 "must issue STARTTLS / authentication required", 535 "credentials invalid", 538
# "encryption required": the server refuses us, not the message — our configuration's fault.
_OURS = {530, 535, 538}


def _refused(code: int, reply: bytes | str, what: str) -> None:
    if code in _OURS:
        raise ConfigError(f"the SMTP server refuses this connection's setup ({code})")
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    status = parse(f"{code} {text}")[1]  # the codes only: the text may quote the recipient
    said = f"{code} {status}" if status else str(code)
    if 500 <= code < 600:
        raise MailRejected(
            f"the SMTP server refused {what} for good ({said})", smtp=code, status=status
        )
    if 400 <= code < 500:
        raise MailDeferred(
            f"the SMTP server refused {what} for now ({said}); retry later",
            smtp=code,
            status=status,
        )
    raise UpstreamError(f"the SMTP server answered {what} with {code}; retry later")
