"""A local stand-in for Resend's HTTP API, speaking its REST shapes, for the official SDK
(``resend.api_url`` pointed here) and for the events Resend posts to us.

Routes: ``POST /emails`` (``Authorization: Bearer <key>``; ``Idempotency-Key`` answered with
the first request's id, as Resend does for 24 hours) and ``GET /emails/receiving/{id}`` (an
inbound message seeded with ``inbound``). Errors use Resend's shape
(``{"statusCode", "name", "message"}``). What the real service decides later and elsewhere is
scripted by recipient, like ``colony.testing.smtp_server``: ``bounce-me@…`` is refused for good
(422 ``validation_error``), ``defer-me@…`` for now (429 ``rate_limit_exceeded``).

``delivery_event`` / ``received_event`` build event bodies as Resend posts them, and
``signed`` signs one the way Resend does (Svix: ``svix-id``, ``svix-timestamp``,
``svix-signature``), so tests and the demo post exactly what Resend would.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime
from typing import Any

from colony.svix import sign_svix
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route

API_KEY = "re_test_colony_stand_in"
_POLICY = SMTP.clone(max_line_length=998)


def webhook_secret(seed: bytes = b"colony-resend-stand-in") -> str:
    """A ``whsec_`` signing secret as Resend shows one for a webhook endpoint."""
    return "whsec_" + base64.b64encode(seed.ljust(24, b"-")[:24]).decode()


def resend_error(status: int, name: str, message: str) -> Reply:
    return Reply(status, {"statusCode": status, "name": name, "message": message})


@dataclass(frozen=True)
class Sent:
    """One message Resend accepted: its id, recipients, tags and the message as delivered."""

    id: str
    rcpt_tos: tuple[str, ...]
    tags: dict[str, str]
    message: EmailMessage


class ResendServer(ProviderServer):
    """Resend on 127.0.0.1; ``received`` is what it accepted, once per idempotency key."""

    unauthorised = ("missing_api_key", "Missing API key in the authorization header")
    rate_limited = ("rate_limit_exceeded", "Too many requests. Please retry later.")

    def __init__(self, api_key: str = API_KEY) -> None:
        self.api_key = api_key
        self.received: list[Sent] = []
        self._inbound: dict[str, dict[str, Any]] = {}
        self._keys: dict[str, str] = {}
        self._lock = threading.Lock()
        super().__init__(
            routes=[
                Route.of("resend.emails.send", "POST", r"/emails", self._send),
                Route.of(
                    "resend.emails.receiving.get",
                    "GET",
                    r"/emails/receiving/(?P<id>[A-Za-z0-9-]+)",
                    self._get_inbound,
                ),
            ]
        )

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        return resend_error(status, code, message)

    def _authorised(self, request: RecordedRequest) -> Reply | None:
        if (denied := super()._authorised(request)) is not None:
            return denied
        if request.header("authorization") != f"Bearer {self.api_key}":
            return resend_error(403, "invalid_api_key", "API key is invalid")
        return None

    def _send(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        body = request.body if isinstance(request.body, dict) else {}
        to = body.get("to")
        to = [to] if isinstance(to, str) else to
        if not to or not body.get("from") or not body.get("subject"):
            return resend_error(422, "validation_error", "Missing `to`, `from` or `subject`.")
        if any(str(t).startswith("bounce-me@") for t in to):
            return resend_error(422, "validation_error", "Invalid `to` field.")
        if any(str(t).startswith("defer-me@") for t in to):
            return resend_error(429, *self.rate_limited)
        key = request.header("idempotency-key")
        with self._lock:
            if key and key in self._keys:
                return Reply(200, {"id": self._keys[key]})
            sent = Sent(
                str(uuid.uuid4()),
                tuple(to),
                {t["name"]: t["value"] for t in body.get("tags") or []},
                _message(body),
            )
            self.received.append(sent)
            if key:
                self._keys[key] = sent.id
        return Reply(200, {"id": sent.id})

    def inbound(
        self,
        *,
        sender: str,
        to: str,
        subject: str,
        text: str,
        in_reply_to: str | None = None,
        references: str | None = None,
        message_id: str | None = None,
    ) -> str:
        """Seed an inbound message (a reply) as Resend's receiving API holds it; its id."""
        email_id = str(uuid.uuid4())
        message_id = message_id or f"<{uuid.uuid4()}@mail.example>"
        headers = {"Message-ID": message_id, "Date": format_datetime(datetime.now(UTC))}
        if in_reply_to:
            headers["In-Reply-To"] = in_reply_to
        if references:
            headers["References"] = references
        self._inbound[email_id] = {
            "object": "email",
            "id": email_id,
            "to": [to],
            "from": sender,
            "created_at": datetime.now(UTC).isoformat(),
            "subject": subject,
            "html": None,
            "text": text,
            "bcc": [],
            "cc": [],
            "reply_to": [],
            "received_for": [to],
            "message_id": message_id,
            "headers": headers,
            "attachments": [],
        }
        return email_id

    def _get_inbound(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        found = self._inbound.get(request.params["id"])
        if found is None:
            return resend_error(404, "not_found", "Email not found")
        return Reply(200, found)


def _message(body: dict[str, Any]) -> EmailMessage:
    message = EmailMessage(policy=_POLICY)
    headers = dict(body.get("headers") or {})
    message["Message-ID"] = headers.pop("Message-ID", None) or f"<{uuid.uuid4()}@resend.dev>"
    message["Date"] = format_datetime(datetime.now(UTC))
    message["From"] = body["from"]
    message["To"] = ", ".join(body["to"] if isinstance(body["to"], list) else [body["to"]])
    message["Subject"] = body["subject"]
    for name, value in headers.items():
        message[name] = value
    message.set_content(body.get("text") or "")
    return message


def delivery_event(kind: str, sent: Sent, **data: Any) -> bytes:
    """An ``email.*`` event body for a message the stand-in accepted (``kind``: delivered,
    bounced, complained, …; ``bounce={"type": "Permanent", …}`` for a bounce)."""
    event = {
        "type": f"email.{kind}",
        "created_at": datetime.now(UTC).isoformat(),
        "data": {
            "created_at": datetime.now(UTC).isoformat(),
            "email_id": sent.id,
            "message_id": sent.message["Message-ID"],
            "from": sent.message["From"],
            "to": list(sent.rcpt_tos),
            "subject": sent.message["Subject"],
            "tags": dict(sent.tags),
            **data,
        },
    }
    return json.dumps(event).encode()


def received_event(email_id: str, *, to: str = "replies@colony.localhost") -> bytes:
    """An ``email.received`` event body (Resend sends no body or headers: they are fetched)."""
    event = {
        "type": "email.received",
        "created_at": datetime.now(UTC).isoformat(),
        "data": {
            "email_id": email_id,
            "created_at": datetime.now(UTC).isoformat(),
            "from": "someone@example.com",
            "to": [to],
            "bcc": [],
            "cc": [],
            "received_for": [to],
            "message_id": f"<{email_id}@inbound.example>",
            "subject": "Re:",
            "attachments": [],
        },
    }
    return json.dumps(event).encode()


def signed(
    secret: str, body: bytes, *, msg_id: str | None = None, at: datetime | None = None
) -> dict[str, str]:
    """The headers Resend (Svix) sends with ``body``: a fresh ``svix-id`` unless given."""
    return sign_svix(secret, body, msg_id or f"msg_{uuid.uuid4().hex}", at or datetime.now(UTC))
