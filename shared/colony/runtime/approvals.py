"""Who may decide an approval item, and whether a delivery event really came from the ESP."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from colony.contracts.common import Strict
from colony.errors import ConfigError, Unauthorized, ValidationFailed
from colony.runtime.auth import verify_approval_token, verify_bearer
from colony.settings import Settings

if TYPE_CHECKING:
    from colony.observability.logs import Headers

Action = Literal["approve", "reject", "edit"]
SIGNATURE_HEADER = "X-Colony-Signature"


class ApprovalRequest(Strict):
    """Either a signed approval-link ``token``, or ``item_id`` + ``action`` with a bearer JWT."""

    item_id: str | None = Field(default=None, min_length=1, max_length=200)
    action: Action | None = None
    edited: dict[str, Any] | None = None
    token: str | None = Field(default=None, min_length=1, max_length=2000)

    @model_validator(mode="after")
    def _complete(self) -> ApprovalRequest:
        if self.token is None and (self.item_id is None or self.action is None):
            raise ValueError("send item_id and action (with a bearer token), or a link token")
        return self


class DeliveryEvent(Strict):
    org_id: str = Field(min_length=1, max_length=200)
    outbox_id: str = Field(min_length=1, max_length=200)
    event: Literal["delivered", "bounced", "complained", "replied"]
    event_id: str = Field(min_length=1, max_length=200)


def authorise(
    authorization: str | None, body: ApprovalRequest, settings: Settings, now: datetime
) -> tuple[str, str, Action, str]:
    """(org, item, action, decided_by) for an approval request, or Unauthorized."""
    if body.token is not None:
        if not settings.approval_token_key:
            raise ConfigError("COLONY_APPROVAL_TOKEN_KEY is not set; approval links cannot work")
        claim = verify_approval_token(settings.approval_token_key, body.token, now)
        if body.item_id not in (None, claim.item_id) or body.action not in (None, claim.action):
            raise Unauthorized("the approval link is for another item or action")
        if claim.action not in ("approve", "reject"):
            raise ValidationFailed("approval links can only approve or reject")
        return claim.org_id, claim.item_id, claim.action, "approval-link"  # type: ignore[return-value]
    principal = verify_bearer(authorization, settings)
    assert body.item_id is not None and body.action is not None  # checked by the model
    return principal.org_id, body.item_id, body.action, principal.user_id


def sign_delivery(secret: str, raw: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


def verify_delivery_signature(raw: bytes, headers: Headers, settings: Settings) -> None:
    """The ESP signs each raw body with the shared secret (HMAC-SHA256); compare in constant
    time. The org named in the body is trusted only because the signature covers it."""
    if not settings.delivery_webhook_secret:
        raise ConfigError("COLONY_DELIVERY_WEBHOOK_SECRET is not set; delivery events are refused")
    given = (headers.get(SIGNATURE_HEADER) or "").encode("utf-8", "replace")
    expected = sign_delivery(settings.delivery_webhook_secret, raw).encode()
    if not hmac.compare_digest(expected, given):
        raise Unauthorized(f"the {SIGNATURE_HEADER} header does not match the body")
