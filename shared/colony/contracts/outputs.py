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

    kind: Literal["missing_data"] = Field(
        default="missing_data", description="Always missing_data: this is not the answer."
    )
    missing_fields: list[Name] = Field(
        min_length=1, max_length=20, description="The fields the data lacks, by name."
    )
    reason: str = Field(
        min_length=1, max_length=500, description="Why the answer cannot be given without them."
    )


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


class KcUpdateCandidate(Strict):
    """Seed §6.4: proposed new knowledge, always routed through approval."""

    kind: Literal["kc_update_candidate"] = Field(
        default="kc_update_candidate", description="Always kc_update_candidate."
    )
    domain: KcDomainId = Field(description="The Knowledge Core domain it belongs in.")
    content: str = Field(min_length=1, max_length=4000, description="The knowledge itself.")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are.")


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


class ContentPiece(Strict):
    """AGT-008."""

    title: str = Field(min_length=1, max_length=200, description="The piece's title.")
    format: Literal["linkedin_post", "blog_post", "one_pager", "email_newsletter"] = Field(
        description="The format asked for."
    )
    body: str = Field(min_length=1, max_length=8000, description="The piece.")


class DeploymentKit(Strict):
    """AGT-009: the deployment kit document's content (rendered to GCS elsewhere)."""

    title: str = Field(min_length=1, max_length=200, description="The kit's title.")
    sections: list[KitSection] = Field(
        min_length=1, max_length=8, description="The kit, section by section."
    )


class KitSection(Strict):
    heading: str = Field(min_length=1, max_length=200, description="The section's heading.")
    body: str = Field(min_length=1, max_length=4000, description="The section.")


class DailyBrief(Strict):
    """AGT-010 (seed §5.5): five sections, ≤250 words in all."""

    pipeline: str = Field(min_length=1, max_length=1500, description="The pipeline now.")
    alerts: str = Field(min_length=1, max_length=1500, description="What needs attention.")
    queue: str = Field(min_length=1, max_length=1500, description="The approval queue.")
    yesterday: str = Field(min_length=1, max_length=1500, description="What happened.")
    todays_priorities: str = Field(min_length=1, max_length=1500, description="What to do today.")

    @model_validator(mode="after")
    def _at_most_250_words(self) -> DailyBrief:
        words = sum(len(part.split()) for part in self.model_dump().values())
        if words > 250:
            raise ValueError(f"the brief has {words} words; the limit is 250")
        return self


class ConversationSummary(Strict):
    """AGT-001 history compaction (seed §6.3)."""

    decisions: list[Note] = Field(
        default_factory=list, max_length=10, description="What was decided."
    )
    entity_ids: list[Name] = Field(
        default_factory=list, max_length=20, description="The ids of what was discussed."
    )
    pending_items: list[Note] = Field(
        default_factory=list, max_length=10, description="What is still open."
    )
    user_preferences: list[Note] = Field(
        default_factory=list, max_length=10, description="How the person likes to work."
    )


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
