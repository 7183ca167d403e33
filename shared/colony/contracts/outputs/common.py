"""What every agent's answer may be, and what more than one agent proposes: ``MissingData``
(CONST-004: a required field is absent, never a guessed value) and ``KcUpdateCandidate``
(seed §6.4: new knowledge, always routed through approval)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from colony.contracts.common import KcDomainId, Strict

# Every list and string is bounded, so each contract has a largest answer, and each agent's
# output token cap is sized to it (colony/registry/budgets.json "calls"; tests/test_budgets.py).
Name = Annotated[str, Field(min_length=1, max_length=120)]  # a field, rule or id
Note = Annotated[str, Field(min_length=1, max_length=300)]  # one remembered line


class MissingData(Strict):
    """CONST-004: a required field is absent; never a guessed value."""

    kind: Literal["missing_data"] = Field(
        default="missing_data", description="Always missing_data: this is not the answer."
    )
    missing_fields: list[Name] = Field(
        min_length=1, max_length=20, description="The fields the data lacks, by name."
    )
    reason: str = Field(
        min_length=1, max_length=500, description="Why the answer cannot be given without them."
    )


class KcUpdateCandidate(Strict):
    """Seed §6.4: proposed new knowledge, always routed through approval."""

    kind: Literal["kc_update_candidate"] = Field(
        default="kc_update_candidate", description="Always kc_update_candidate."
    )
    domain: KcDomainId = Field(description="The Knowledge Core domain it belongs in.")
    content: str = Field(min_length=1, max_length=4000, description="The knowledge itself.")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are.")
