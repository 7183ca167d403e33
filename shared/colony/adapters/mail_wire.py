"""A ``Mail`` as the bytes that go on the wire (RFC 5322), DKIM-signed when it carries a key:
what the SMTP sender hands a relay, and what the Gmail and Graph adapters send as raw MIME.

Signed last, over exactly these bytes, so what a server receives is what was signed.
"""

from __future__ import annotations

from email.generator import BytesGenerator
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate
from io import BytesIO

from colony.adapters.dkim import signed
from colony.ports import Mail

# RFC 5322 allows 998 characters a line: no folding of our one-line headers (Python folds a
# long Subject before its first word, which a reader then sees as a leading space).
_POLICY = SMTP.clone(max_line_length=998)
_INTERNATIONAL = _POLICY.clone(utf8=True)  # RFC 6531: headers in UTF-8, as SMTPUTF8 carries


def wire(mail: Mail, *, international: bool = False) -> bytes:
    """The message's bytes as ``send_message`` would write them, signed when it has a key:
    signed before any connection opens, so a key that cannot sign fails first."""
    message = _message(mail)
    policy = _INTERNATIONAL if international else _POLICY
    with BytesIO() as out:
        BytesGenerator(out, policy=policy).flatten(message, linesep="\r\n")
        raw = out.getvalue()
    return raw if mail.dkim is None else signed(raw, mail.dkim)


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
