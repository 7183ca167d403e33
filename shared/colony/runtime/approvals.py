"""Who may decide an approval item."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from colony.contracts.common import Strict
from colony.errors import ConfigError, Forbidden, Unauthorized, ValidationFailed
from colony.runtime.auth import verify_approval_token, verify_bearer
from colony.settings import Settings

if TYPE_CHECKING:
    pass

Action = Literal["approve", "reject", "edit"]


class ApprovalRequest(Strict):
    """``item_id`` + ``action`` (and ``edited`` for an edit), or a signed approval-link
    ``token``; always with the bearer JWT of the person deciding."""

    item_id: str | None = Field(default=None, min_length=1, max_length=200)
    action: Action | None = None
    edited: dict[str, Any] | None = None
    reason: str | None = Field(default=None, max_length=500)
    token: str | None = Field(default=None, min_length=1, max_length=2000)

    @model_validator(mode="after")
    def _complete(self) -> ApprovalRequest:
        if self.token is None and (self.item_id is None or self.action is None):
            raise ValueError("send item_id and action, or a link token")
        return self


@dataclass(frozen=True, slots=True)
class Decider:
    """Who asks to decide what, verified: the flow's ``Actor`` is built from it."""

    org_id: str
    item_id: str
    action: Action
    user_id: str
    channel: Literal["ui", "link"]
    link_nonce: str | None = None


def authorise(
    authorization: str | None, body: ApprovalRequest, settings: Settings, now: datetime
) -> Decider:
    """Who decides what, for an approval request, or why not.

    A person always signs in: a link is bound to the person it was sent to, so it works only
    in their session (``Forbidden`` for anyone else, even of the same org). A link's nonce
    goes with the decision, which spends it (``flows.approvals.approval`` refuses it a second time).
    """
    principal = verify_bearer(authorization, settings)
    if body.token is None:
        assert body.item_id is not None and body.action is not None  # checked by the model
        return Decider(principal.org_id, body.item_id, body.action, principal.user_id, "ui")
    if not settings.approval_token_key:
        raise ConfigError("COLONY_APPROVAL_TOKEN_KEY is not set; approval links cannot work")
    claim = verify_approval_token(settings.approval_token_key, body.token, now)
    if body.item_id not in (None, claim.item_id) or body.action not in (None, claim.action):
        raise Unauthorized("the approval link is for another item or action")
    if claim.action not in ("approve", "reject"):
        raise ValidationFailed("approval links can only approve or reject")
    if claim.org_id != principal.org_id:
        raise Forbidden("the approval link is for another organisation")
    if claim.recipient != principal.user_id:
        raise Forbidden("this approval link was sent to someone else")
    action: Action = claim.action  # type: ignore[assignment]  # checked just above
    return Decider(claim.org_id, claim.item_id, action, principal.user_id, "link", claim.nonce)
