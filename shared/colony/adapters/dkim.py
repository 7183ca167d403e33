"""DKIM signatures (RFC 6376) over the bytes a sender hands over, with ``dkimpy``.

Signed with ``relaxed/relaxed`` canonicalisation, so a relay that refolds a header or
trims trailing white space does not break the signature, and over the headers a recipient
reads or a thread is built from; ``From`` is signed twice (oversigned, RFC 6376 §8.15), so a
second ``From`` cannot be added by anyone below us without breaking it.
"""

from __future__ import annotations

import dkim

from colony.errors import ConfigError
from colony.ports import DkimKey

SIGNED = (
    b"from",
    b"to",
    b"subject",
    b"date",
    b"message-id",
    b"reply-to",
    b"in-reply-to",
    b"references",
    b"list-unsubscribe",
    b"list-unsubscribe-post",
    b"mime-version",
    b"content-type",
    b"content-transfer-encoding",
)


def signed(message: bytes, key: DkimKey) -> bytes:
    """``message`` with its ``DKIM-Signature`` header first."""
    present = {line.split(b":", 1)[0].strip().lower() for line in _header_lines(message)}
    headers = [h for h in SIGNED if h in present] + [b"from"]
    try:
        signature = dkim.sign(
            message,
            key.selector.encode("ascii"),
            key.domain.encode("ascii"),
            key.private_key.encode("ascii"),
            canonicalize=(b"relaxed", b"relaxed"),
            include_headers=headers,
        )
    except (dkim.DKIMException, dkim.UnparsableKeyError, UnicodeEncodeError) as error:
        # the key in the secret store is not one we made, or the domain is not ASCII
        raise ConfigError(
            f"cannot DKIM-sign for {key.domain!r} with selector {key.selector!r}:"
            f" {type(error).__name__}"
        ) from None
    return signature + message


def _header_lines(message: bytes) -> list[bytes]:
    head = message.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    return [line for line in head.splitlines() if line and line[:1] not in (b" ", b"\t")]
