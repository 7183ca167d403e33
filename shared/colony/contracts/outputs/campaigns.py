"""The campaign chain's answers: AGT-003's enrichment, AGT-004's qualification score and
AGT-005's outbound message (seed §5.2, §5.4; CONST-002)."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field, model_validator

from colony.contracts.common import OutboundAngle, Strict
from colony.contracts.outputs.common import Name


class DimensionScores(Strict):
    """The ICP rubric's dimensions, each scored on its own."""

    size: int = Field(ge=0, le=100, description="Fit of the company's size.")
    vertical: int = Field(ge=0, le=100, description="Fit of the company's vertical.")
    tech_stack: int = Field(ge=0, le=100, description="Fit of the tools it runs.")
    signals: int = Field(ge=0, le=100, description="Strength of its buying signals.")
    timing: int = Field(ge=0, le=100, description="How ready it is to buy now.")


class QualificationScore(Strict):
    """AGT-004 (seed §5.4): a proposed score and its reasons. Any disqualifier forces a total
    of 0 (CONST-002). The tier and outcome are not the model's: ``colony.policy.tiering``
    decides them from the org's bands; a ``recommendation`` the model adds is kept only as
    its view."""

    total_score: int = Field(ge=0, le=100, description="0 when any disqualifier matched.")
    dimension_scores: DimensionScores
    disqualifiers: list[Name] = Field(
        default_factory=list, max_length=10, description="The ids of the anti-ICP rules matched."
    )
    recommendation: Literal["qualify", "hold", "disqualify"] | None = Field(
        default=None, description="Your view only: the org's policy decides."
    )
    reasoning: str = Field(
        min_length=1, max_length=400, description="Why, in at most two sentences."
    )

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
    ] = Field(description="The kind of signal.")
    detail: str = Field(min_length=1, max_length=400, description="The signal, in one sentence.")
    # Provenance (issue 19 item 1; issue 33): the words the signal rests on, where they were
    # read (a contact field such as ``enrichment.recent_news``, or a stored page's passage by
    # its ref, ``S2``) and how sure the model is. Stored per contact
    # (``colony.store.campaigns.signals``) with a passage's ref resolved to its page's URL; a
    # signal without a quote of three words or more is dropped.
    quote: str | None = Field(
        default=None,
        min_length=1,
        max_length=400,
        description="The words the signal rests on, copied word for word from its source.",
    )
    source: str = Field(
        default="contact",
        min_length=1,
        max_length=120,
        description="Where the quote was read: a passage ref (S2) or a contact field.",
    )
    confidence: float = Field(default=0.5, ge=0, le=1, description="How sure you are.")
    observed_on: date | None = Field(
        default=None, description="The day the data says it happened; null when it does not."
    )


class CompanyFact(Strict):
    """A firmographic fact a stored page states (issue 33): what AGT-004's rubric reads
    (size, vertical, offices, tech stack) for a prospect imported without them. ``value`` is
    the ICP's own label for ``vertical`` and ``tech_stack``, a number for the counts."""

    field: Literal["employee_count", "office_count", "vertical", "tech_stack"] = Field(
        description="Which fact: a count, the vertical or a technology."
    )
    value: str = Field(
        min_length=1,
        max_length=80,
        description="Digits for a count; a label from icp_vocabulary, exactly, otherwise.",
    )
    quote: str = Field(
        min_length=1,
        max_length=300,
        description="The sentence that states it, copied word for word from the passage.",
    )
    source: str = Field(
        min_length=1, max_length=120, description="The ref of the passage quoted (e.g. S2)."
    )


class ProspectEnrichment(Strict):
    """AGT-003: the enrichment an agent may add, each signal and fact grounded in the raw
    data or a stored page (its quote verbatim, its source named)."""

    summary: str = Field(
        min_length=1, max_length=600, description="The prospect, for the sales team."
    )
    signals: list[ProspectSignal] = Field(
        default_factory=list,
        max_length=10,
        description="Only the buying signals the contact's data or sources state; none is fine.",
    )
    persona: str | None = Field(
        default=None, max_length=120, description="The contact's role, as a buyer persona."
    )
    facts: list[CompanyFact] = Field(
        default_factory=list,
        max_length=6,
        description=(
            "What the sources state about the company that the contact's data lacks; none is fine."
        ),
    )


class OutboundMessage(Strict):
    """AGT-005 (seed §5.2)."""

    subject: str = Field(min_length=1, max_length=120, description="At most 8 words.")
    body: str = Field(min_length=1, max_length=2000, description="The message, in sentences.")
    angle_used: OutboundAngle = Field(description="The campaign's angle.")
    signal_referenced: str = Field(
        min_length=1,
        max_length=400,
        description="The detail of the one signal the body references, copied from the signals.",
    )
