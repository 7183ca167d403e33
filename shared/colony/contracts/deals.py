"""A deal update (ENT-003) as an approval item carries it: ``{"deal_id", "changes": {stage?,
value?, next_action?, close_date?}, "source": {...}}``. AGT-006 proposes one, a person may edit
it (``flows.approvals.approval_kinds``), and approving it applies it
(``flows.pipeline.deals``); all three read it through ``parse_update``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from colony.contracts.common import Strict
from colony.errors import ValidationFailed

Stage = Literal["discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost"]


class DealChanges(Strict):
    stage: Stage | None = None
    value: Decimal | None = Field(default=None, ge=0, max_digits=14, decimal_places=2)
    next_action: str | None = Field(default=None, min_length=1, max_length=2000)
    close_date: date | None = None


class DealUpdate(BaseModel):
    """The payload; other top-level keys (a rationale, say) are kept but not applied. Built on
    first use, as every contract is (``Strict``)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    deal_id: str = Field(min_length=1, max_length=200)
    changes: DealChanges
    source: dict[str, Any] = Field(default_factory=dict)


def parse_update(payload: Mapping[str, Any]) -> DealUpdate:
    try:
        update = DealUpdate.model_validate(dict(payload))
    except ValidationError as error:
        fields = ", ".join(
            ".".join(map(str, e["loc"])) for e in error.errors(include_input=False)[:3]
        )
        raise ValidationFailed(f"the deal update is invalid at: {fields}") from None
    if not update.changes.model_dump(exclude_none=True):
        raise ValidationFailed("the deal update changes nothing")
    return update
