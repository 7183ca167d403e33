"""The campaign chain's answers: AGT-003's enrichment, AGT-004's qualification score and
AGT-005's outbound message (seed §5.2, §5.4; CONST-002)."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field, model_validator

from colony.contracts.common import OutboundAngle, Strict
from colony.contracts.outputs.common import Name


class DimensionScores(Strict):
    size: int = Field(ge=0, le=100)
    vertical: int = Field(ge=0, le=100)
    tech_stack: int = Field(ge=0, le=100)
    signals: int = Field(ge=0, le=100)
    timing: int = Field(ge=0, le=100)


class QualificationScore(Strict):
    """AGT-004 (seed §5.4): a proposed score and its reasons. Any disqualifier forces a total
    of 0 (CONST-002). The tier and outcome are not the model's: ``colony.policy.tiering``
    decides them from the org's bands; a ``recommendation`` the model adds is kept only as
    its view."""

    total_score: int = Field(ge=0, le=100)
    dimension_scores: DimensionScores
    disqualifiers: list[Name] = Field(default_factory=list, max_length=10)
    recommendation: Literal["qualify", "hold", "disqualify"] | None = None
    reasoning: str = Field(min_length=1, max_length=400)

    @model_validator(mode="after")
    def _disqualified_means_zero(self) -> QualificationScore:
        wrong = self.recommendation not in (None, "disqualify")
        if self.disqualifiers and (self.total_score != 0 or wrong):
            raise ValueError("a prospect with disqualifiers must score 0 and be 'disqualify'")
        return self


class ProspectSignal(Strict):
    type: Literal[
        "expansion",
        "hiring",
        "leadership_change",
        "funding",
        "lease_expiry",
        "consolidation",
        "tech_adoption",
    ]
    detail: str = Field(min_length=1, max_length=400)
    # Provenance (issue 19 item 1): the words of the contact's data the signal rests on, where they
    # were read (``signals[2]``, ``enrichment.recent_news``) and how sure the model is. Stored per
    # contact (``colony.store.campaigns.signals``); a quote defaults to the detail.
    quote: str | None = Field(default=None, min_length=1, max_length=400)
    source: str = Field(default="contact", min_length=1, max_length=120)
    confidence: float = Field(default=0.5, ge=0, le=1)
    observed_on: date | None = None


class ProspectEnrichment(Strict):
    """AGT-003: the enrichment an agent may add, each signal grounded in the raw data."""

    summary: str = Field(min_length=1, max_length=600)
    signals: list[ProspectSignal] = Field(default_factory=list, max_length=10)
    persona: str | None = Field(default=None, max_length=120)


class OutboundMessage(Strict):
    """AGT-005 (seed §5.2)."""

    subject: str = Field(min_length=1, max_length=120)
    body: str = Field(min_length=1, max_length=2000)
    angle_used: OutboundAngle
    signal_referenced: str = Field(min_length=1, max_length=400)
