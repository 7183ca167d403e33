"""Every agent's structured output (seed §5, §6.3, §6.4; CONST-002, CONST-004).

These are the JSON contracts the models are asked for and the runner validates against.
Deterministic policy that no model may be trusted with (CONST-006 message shape) lives in
``colony.policy.outbound``; what is here is what a schema can say.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import Field, model_validator

from colony.contracts.chat import OrchestratorReply
from colony.contracts.common import KcDomainId, OutboundAngle, Strict

# Every list and string is bounded, so each contract has a largest answer, and each agent's
# output token cap is sized to it (colony/registry/budgets.json "calls"; tests/test_budgets.py).
Name = Annotated[str, Field(min_length=1, max_length=120)]  # a field, rule or id
Note = Annotated[str, Field(min_length=1, max_length=300)]  # one remembered line

SignalType = Literal[
    "budget_signals",
    "timeline_signals",
    "stakeholder_signals",
    "objection_signals",
    "competitor_mentions",
    "product_gaps",
]


class MissingData(Strict):
    """CONST-004: a required field is absent; never a guessed value."""

    kind: Literal["missing_data"] = "missing_data"
    missing_fields: list[Name] = Field(min_length=1, max_length=20)
    reason: str = Field(min_length=1, max_length=500)


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


class ProspectEnrichment(Strict):
    """AGT-003: the enrichment an agent may add, each signal grounded in the raw data."""

    summary: str = Field(min_length=1, max_length=600)
    signals: list[ProspectSignal] = Field(default_factory=list, max_length=10)
    persona: str | None = Field(default=None, max_length=120)


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


class OutboundMessage(Strict):
    """AGT-005 (seed §5.2)."""

    subject: str = Field(min_length=1, max_length=120)
    body: str = Field(min_length=1, max_length=2000)
    angle_used: OutboundAngle
    signal_referenced: str = Field(min_length=1, max_length=400)


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


class KcUpdateCandidate(Strict):
    """Seed §6.4: proposed new knowledge, always routed through approval."""

    kind: Literal["kc_update_candidate"] = "kc_update_candidate"
    domain: KcDomainId
    content: str = Field(min_length=1, max_length=4000)
    confidence: float = Field(ge=0.0, le=1.0)


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


class ContentPiece(Strict):
    """AGT-008."""

    title: str = Field(min_length=1, max_length=200)
    format: Literal["linkedin_post", "blog_post", "one_pager", "email_newsletter"]
    body: str = Field(min_length=1, max_length=8000)


class DeploymentKit(Strict):
    """AGT-009: the deployment kit document's content (rendered to GCS elsewhere)."""

    title: str = Field(min_length=1, max_length=200)
    sections: list[KitSection] = Field(min_length=1, max_length=8)


class KitSection(Strict):
    heading: str = Field(min_length=1, max_length=200)
    body: str = Field(min_length=1, max_length=4000)


class DailyBrief(Strict):
    """AGT-010 (seed §5.5): five sections, ≤250 words in all."""

    pipeline: str = Field(min_length=1, max_length=1500)
    alerts: str = Field(min_length=1, max_length=1500)
    queue: str = Field(min_length=1, max_length=1500)
    yesterday: str = Field(min_length=1, max_length=1500)
    todays_priorities: str = Field(min_length=1, max_length=1500)

    @model_validator(mode="after")
    def _at_most_250_words(self) -> DailyBrief:
        words = sum(len(part.split()) for part in self.model_dump().values())
        if words > 250:
            raise ValueError(f"the brief has {words} words; the limit is 250")
        return self


class ConversationSummary(Strict):
    """AGT-001 history compaction (seed §6.3)."""

    decisions: list[Note] = Field(default_factory=list, max_length=10)
    entity_ids: list[Name] = Field(default_factory=list, max_length=20)
    pending_items: list[Note] = Field(default_factory=list, max_length=10)
    user_preferences: list[Note] = Field(default_factory=list, max_length=10)


ProspectEnrichment.model_rebuild()
DeploymentKit.model_rebuild()

# Contract name → model, for prompts, schemas and the offline provider.
OUTPUT_CONTRACTS: dict[str, type[Strict]] = {
    "qualification_score": QualificationScore,
    "prospect_enrichment": ProspectEnrichment,
    "outbound_message": OutboundMessage,
    "call_signals": CallSignals,
    "call_summary": CallSummary,
    "follow_up_draft": FollowUpDraft,
    "content_piece": ContentPiece,
    "deployment_kit": DeploymentKit,
    "daily_brief": DailyBrief,
    "conversation_summary": ConversationSummary,
    "missing_data": MissingData,
    "kc_update_candidate": KcUpdateCandidate,
    "orchestrator_reply": OrchestratorReply,  # AGT-001's chat turn (colony.contracts.chat)
}
