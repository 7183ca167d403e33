"""AGT-001 chat contracts: the HTTP bodies, the orchestrator's answer and its tool arguments.

Each tool's argument model is its JSON schema (``ToolDefinition.parameters``) and the gate the
model's arguments pass before anything runs: a model that sends arguments breaking the schema
gets a clear ``invalid_tool_arguments`` error, never a half-run tool.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from colony.contracts.common import Strict
from colony.contracts.research import domain_of

Angle = Literal["Signal", "Pain", "Referral", "PatternBreak", "Insight"]
Tier = Literal["T1", "T2", "T3", "T4", "T5"]
KcDomain = Literal[
    "KC-01", "KC-02", "KC-03", "KC-04", "KC-05", "KC-06", "KC-07", "KC-08", "KC-09", "KC-10"
]
ContentFormat = Literal["linkedin_post", "blog_post", "one_pager", "email_newsletter"]

MAX_MESSAGE_CHARS = 4000  # a hard cap before tokenizing; the task budget is the real limit


class TurnRequest(Strict):
    """POST /turns: a message for a session (a new session when ``session_id`` is absent)."""

    session_id: str | None = Field(default=None, min_length=1, max_length=200)
    message: str = Field(max_length=MAX_MESSAGE_CHARS)


class Proposal(Strict):
    """The chat tool call that proposed a decision a person is now confirming."""

    session_id: str = Field(min_length=1, max_length=200)
    call_id: str = Field(min_length=1, max_length=200)


class DecisionRequest(Strict):
    """POST /approvals: approve, reject or edit an item from its card (``edited``: the fields
    an edit replaces, which its kind must allow; ``proposal``: the card confirms a decision
    the chat proposed, never an edit)."""

    item_id: str = Field(min_length=1, max_length=200)
    action: Literal["approve", "reject", "edit"]
    reason: str | None = Field(default=None, max_length=500)
    edited: dict[str, Any] | None = Field(default=None, max_length=8)
    proposal: Proposal | None = None


class ProposeDecisionArgs(Strict):
    """The chat may propose a decision; only the person's click on its card makes it."""

    item_id: str = Field(min_length=1, max_length=200)
    action: Literal["approve", "reject"]
    reason: str = Field(min_length=1, max_length=500)


class OrchestratorReply(Strict):
    """The orchestrator's answer when it calls no tool (contract ``orchestrator_reply``)."""

    answer: str = Field(
        min_length=1, max_length=4000, description="What you say to the person, in plain text."
    )


class LaunchCampaignArgs(Strict):
    name: str | None = Field(default=None, min_length=1, max_length=120)
    angle: Angle
    tier: Tier
    contact_external_ids: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="prospects by external id (P-001…); omit for every prospect of the org",
    )


def _company_domain(value: str) -> str:
    domain = domain_of(value)
    if domain is None:  # worded without the value: errors never echo what the model sent
        raise ValueError(
            "names no company domain (e.g. brightsmile.com or https://brightsmile.com); "
            "an IP address, localhost or a metadata host is not one"
        )
    return domain


class ResearchCompanyArgs(Strict):
    """A company whose website to research; force: read it again though read this week."""

    domain: Annotated[str, AfterValidator(_company_domain)] = Field(
        min_length=1,
        max_length=2048,
        description="the company's domain or its website's URL (brightsmile.com)",
    )
    force: bool = False


class PipelineSnapshotArgs(Strict):
    pass


class SearchKnowledgeArgs(Strict):
    query: str = Field(min_length=1, max_length=500)
    domain: KcDomain | None = None
    k: int = Field(default=3, ge=1, le=5)


class ContactSignalsArgs(Strict):
    """A contact by its id, or by (part of) its name or company."""

    contact: str = Field(min_length=1, max_length=200)
    limit: int = Field(default=5, ge=1, le=10)


class ListApprovalsArgs(Strict):
    kind: str | None = Field(default=None, max_length=40)
    limit: int = Field(default=10, ge=1, le=20)
    mine: bool = False  # only the asker's own queue (issue 35: items routed to them)


class AskContentArgs(Strict):
    topic: str = Field(min_length=3, max_length=300)
    format: ContentFormat = "linkedin_post"


EventType = Literal[
    "accepted", "delta", "tool_call", "tool_result", "approval_required", "error", "done"
]
