"""The agent context bundle (seed §4.1) and what it carries."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from colony.contracts.common import (
    KcDomainId,
    OutboundAngle,
    SequenceChannel,
    SequenceTier,
    Strict,
)


class Exemplar(Strict):
    """One Knowledge Core retrieval as the prompt sees it."""

    domain: KcDomainId
    title: str | None = None
    content: str = Field(min_length=1)
    tags: dict[str, str] = Field(default_factory=dict)
    similarity: float | None = None
    chunk_id: int | None = None  # the kc_chunks row it came from (provenance)
    content_hash: str | None = None  # of ``content`` as retrieved (provenance)


class IcpDefinition(Strict):
    description: str
    rubric: dict[str, Any]
    anti_icp_rules: list[dict[str, Any]] = Field(default_factory=list)
    tiers: list[dict[str, Any]] = Field(default_factory=list)  # score bands → T1..T5


class SequenceStep(Strict):
    """One step of the org's sequence library (ENT-004) as a call's org context carries it."""

    angle: OutboundAngle
    tier: SequenceTier
    step: int = Field(ge=1)
    guidance: str
    channel: SequenceChannel = "email"
    delay_days: int = Field(default=0, ge=0)  # after the step before it


class OrgContext(Strict):
    """Layer 2 context: the org's ICP definition, sequence library and deal state.

    ``sequence_library`` is the sequence the call works in (its angle x tier, every step),
    ``deal_stage`` the stage of the contact's deal when there is one (ENT-003)."""

    org_name: str | None = None
    product_description: str = (
        "a real-estate and facilities intelligence platform for multi-site care delivery"
    )
    icp: IcpDefinition | None = None
    sequence_library: list[SequenceStep] = Field(default_factory=list)
    deal_stage: str | None = None


class ToolDefinition(Strict):
    """A tool the model may call: a name, a description and a JSON-schema for arguments."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    description: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class AgentContextBundle(Strict):
    """Everything an agent knows when it starts (seed §4.1)."""

    org_id: str = Field(min_length=1, description="Clerk org id, always present")
    run_id: str = Field(min_length=1, description="run id, for trace correlation")
    agent_role: str = Field(pattern=r"^AGT-\d{3}$", description="typed role constant (AGT id)")
    system_prompt: str
    knowledge_core_exemplars: list[Exemplar] = Field(default_factory=list)
    org_context: OrgContext
    task_payload: dict[str, Any] = Field(default_factory=dict)
    tool_definitions: list[ToolDefinition] = Field(default_factory=list)
