"""The ``Sender`` and ``ReceivedMail`` ports over Resend's HTTP API, through its official SDK
(``resend``): ``POST /emails`` to send, ``GET /emails/receiving/{id}`` to read an inbound
message its ``email.received`` webhook names.

The SDK is configured through module attributes (``resend.api_key``, ``resend.api_url``); an
instance sets them when it is built, and a function holds one instance with one key, so the
module state is this instance's. Each send carries our Message-ID as its header and as its
``Idempotency-Key``: a retry after a crash between Resend's acceptance and our commit is
answered with the first send's result for 24 hours instead of a second message. ``tags``
(``org_id``, ``outbox_id``) come back in every delivery event; Resend allows only ASCII
letters, digits, ``_`` and ``-`` in a tag, so other values travel encoded (``colony.webhooks``).
``Mail.dkim`` is not sent: the API takes fields, not the bytes a signature covers, and Resend
signs with the key of the domain verified in Resend (docs/deploy.md, "Sending domains").

Errors, sorted as the port asks:

    ResendError
     ├─ 401 / 403 (missing or invalid key, unverified domain) ─► ConfigError   (ours)
     ├─ 400 / 422 (an invalid recipient, a refused message)  ─► MailRejected  (for good)
     └─ 429, 5xx, no connection, anything else               ─► UpstreamError (retry)
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime
from typing import Any

import resend
from resend.exceptions import ResendError

from colony.errors import ConfigError, NotFound, UpstreamError
from colony.ports import InboundMail, Mail, MailRejected
from colony.settings import Settings
from colony.webhooks import tag_value


def resend_from_settings(settings: Settings) -> ResendMail:
    """The Resend account the settings name (``COLONY_RESEND_API_KEY``)."""
    if not settings.resend_api_key:
        raise ConfigError(
            "COLONY_RESEND_API_KEY is required when COLONY_MAIL_PROVIDER=resend; set it in the"
            " environment (deployed: the colony-resend-api-key secret)"
        )
    return ResendMail(settings.resend_api_key, api_url=settings.resend_api_url)


class ResendMail:
    def __init__(self, api_key: str, *, api_url: str | None = None, timeout: int = 20) -> None:
        if not api_key:
            raise ConfigError("COLONY_RESEND_API_KEY is required to send through Resend")
        resend.api_key = api_key
        resend.api_url = (api_url or "https://api.resend.com").rstrip("/")
        resend.default_http_client = resend.RequestsClient(timeout=timeout)

    def send(self, mail: Mail) -> None:
        params: dict[str, Any] = {
            "from": mail.sender,
            "to": [mail.to],
            "subject": mail.subject,
            "text": mail.text,
            "headers": {"Message-ID": mail.message_id, **mail.headers},
        }
        if mail.tags:
            params["tags"] = [{"name": k, "value": tag_value(v)} for k, v in mail.tags.items()]
        try:
            resend.Emails.send(params, {"idempotency_key": mail.message_id})  # type: ignore[arg-type]
        except ResendError as error:
            _refused(error)

    def received(self, email_id: str) -> InboundMail:
        try:
            email = resend.Emails.Receiving.get(email_id)
        except ResendError as error:
            if str(error.code) == "404":
                raise NotFound(f"Resend has no inbound message {email_id!r}") from None
            _refused(error)
        return _inbound(dict(email))


def _refused(error: ResendError) -> None:
    code = str(error.code)
    kind = getattr(error, "error_type", "") or type(error).__name__
    if code in ("401", "403"):
        raise ConfigError(f"Resend refuses our key or sending domain ({code} {kind})") from None
    if code in ("400", "422"):
        raise MailRejected(f"Resend refused the message for good ({code} {kind})") from None
    raise UpstreamError(f"Resend did not take the request ({code} {kind}); retry later") from None


def _header(headers: dict[str, str], name: str) -> str | None:
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), None)


def _inbound(email: dict[str, Any]) -> InboundMail:
    headers = {str(k): str(v) for k, v in (email.get("headers") or {}).items()}
    references = tuple((_header(headers, "References") or "").split())
    received_at = None
    if date := _header(headers, "Date"):
        try:
            received_at = parsedate_to_datetime(date)
        except (TypeError, ValueError):
            received_at = None
    return InboundMail(
        message_id=str(email.get("message_id") or _header(headers, "Message-ID") or ""),
        sender=str(email.get("from") or ""),
        subject=str(email.get("subject") or ""),
        text=str(email.get("text") or ""),
        in_reply_to=(_header(headers, "In-Reply-To") or "").strip() or None,
        references=references,
        received_at=received_at,
    )
