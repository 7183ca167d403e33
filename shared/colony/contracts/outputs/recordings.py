"""The recordings' answers: AGT-006's two passes over a call (its signals, then its
summary, CRM updates and knowledge candidates) and AGT-007's follow-up draft."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from colony.contracts.common import Strict
from colony.contracts.outputs.common import KcUpdateCandidate

SignalType = Literal[
    "budget_signals",
    "timeline_signals",
    "stakeholder_signals",
    "objection_signals",
    "competitor_mentions",
    "product_gaps",
]


class CallSignal(Strict):
    """AGT-006 pass 1: one signal with its verbatim quote."""

    type: SignalType = Field(description="The kind of signal.")
    quote: str = Field(
        min_length=1, max_length=1000, description="The transcript's words, copied verbatim."
    )
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are.")


class CallSignals(Strict):
    """AGT-006 pass 1 output (the seed's JSON array, wrapped in an object for schemas)."""

    signals: list[CallSignal] = Field(
        default_factory=list, max_length=30, description="The signals the transcript states."
    )


class CrmFieldUpdates(Strict):
    deal_stage: (
        Literal["discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost"] | None
    ) = Field(default=None, description="The stage the call moved the deal to; null: unchanged.")
    next_action: str | None = Field(
        default=None, max_length=300, description="The next step agreed; null: none."
    )
    close_date: date | None = Field(default=None, description="The close date agreed; null: none.")


class CallKnowledge(KcUpdateCandidate):
    """A KC update candidate drawn from a call: a quote (at most 1,000 characters) with its
    context, so twenty of them still fit one answer's output cap."""

    content: str = Field(
        min_length=1, max_length=1500, description="A quote of the call, with its context."
    )


class CallSummary(Strict):
    """AGT-006 pass 2: executive summary, CRM field updates, KC update candidates."""

    executive_summary: str = Field(min_length=1, max_length=1500, description="The call.")
    crm_updates: CrmFieldUpdates
    kc_updates: list[CallKnowledge] = Field(
        default_factory=list, max_length=20, description="Knowledge worth keeping."
    )


class FollowUpDraft(Strict):
    """AGT-007: the post-call follow-up email."""

    subject: str = Field(min_length=1, max_length=120, description="The email's subject.")
    body: str = Field(min_length=1, max_length=3000, description="The email.")
