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

    type: SignalType
    quote: str = Field(min_length=1, max_length=1000)
    confidence: float = Field(ge=0.0, le=1.0)


class CallSignals(Strict):
    """AGT-006 pass 1 output (the seed's JSON array, wrapped in an object for schemas)."""

    signals: list[CallSignal] = Field(default_factory=list, max_length=30)


class CrmFieldUpdates(Strict):
    deal_stage: (
        Literal["discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost"] | None
    ) = None
    next_action: str | None = Field(default=None, max_length=300)
    close_date: date | None = None


class CallKnowledge(KcUpdateCandidate):
    """A KC update candidate drawn from a call: a quote (at most 1,000 characters) with its
    context, so twenty of them still fit one answer's output cap."""

    content: str = Field(min_length=1, max_length=1500)


class CallSummary(Strict):
    """AGT-006 pass 2: executive summary, CRM field updates, KC update candidates."""

    executive_summary: str = Field(min_length=1, max_length=1500)
    crm_updates: CrmFieldUpdates
    kc_updates: list[CallKnowledge] = Field(default_factory=list, max_length=20)


class FollowUpDraft(Strict):
    """AGT-007: the post-call follow-up email."""

    subject: str = Field(min_length=1, max_length=120)
    body: str = Field(min_length=1, max_length=3000)
