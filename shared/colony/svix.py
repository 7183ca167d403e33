"""Svix's webhook signatures (Clerk's and Resend's): ``svix-id``, ``svix-timestamp`` and
``svix-signature`` over the raw body, checked by ``standardwebhooks`` (Svix's scheme under
the Standard Webhooks names). Apart from ``colony.webhooks`` so that only the functions that
receive Svix-signed deliveries carry the verifier in their bundles."""

from __future__ import annotations

import binascii
from datetime import datetime

from colony.errors import ConfigError, Unauthorized
from colony.webhooks import HeaderReader

SVIX_HEADERS = ("svix-id", "svix-timestamp", "svix-signature")


def verify_svix(secret: str, raw: bytes, headers: HeaderReader, what: str) -> str:
    """Check a Svix-signed delivery (Clerk's, Resend's): ``svix-id``, ``svix-timestamp`` and
    ``svix-signature`` over the raw body, with Svix's 5-minute window on the timestamp (a
    replay outside it, or a timestamp from the future, is refused). Returns the ``svix-id``,
    the delivery's idempotency key. ``Unauthorized`` unless it verifies."""
    # lazy: a small pure-Python wheel, loaded on the first delivery, not at cold start
    from standardwebhooks import Webhook, WebhookVerificationError

    found = {name: headers.get(name) for name in SVIX_HEADERS}
    if not all(found.values()):
        raise Unauthorized(f"a {what} webhook needs svix-id, svix-timestamp and svix-signature")
    # Svix's own headers, under the Standard Webhooks names the verifier reads (same scheme)
    named = {name.replace("svix-", "webhook-"): str(value) for name, value in found.items()}
    try:
        webhook = Webhook(secret)
    except (binascii.Error, ValueError) as error:
        raise ConfigError(f"the {what} webhook secret is not a whsec_ secret") from error
    try:
        webhook.verify(raw, named, json_parse=False)
    except WebhookVerificationError as error:  # bad, missing, too old or too new
        raise Unauthorized(f"the Svix signature does not verify ({error})") from None
    except (binascii.Error, ValueError, UnicodeDecodeError):  # a malformed signature header
        raise Unauthorized("the Svix signature does not verify (malformed)") from None
    return str(found["svix-id"])


def sign_svix(secret: str, raw: bytes, msg_id: str, timestamp: datetime) -> dict[str, str]:
    """The three headers Svix sends with ``raw`` (what tests and the demo post)."""
    # lazy: as in verify_svix
    from standardwebhooks import Webhook

    signature = Webhook(secret).sign(msg_id, timestamp, raw.decode())
    return {
        "svix-id": msg_id,
        "svix-timestamp": str(int(timestamp.timestamp())),
        "svix-signature": signature,
        "Content-Type": "application/json",
    }
