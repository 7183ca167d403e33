"""The cross-agent handoff envelope (seed §4.4): exactly the seed's fields."""

from __future__ import annotations

from pydantic import Field

from colony.contracts.common import KcDomainId, OutboundAngle, SequenceTier, Strict


class HandoffEnvelope(Strict):
    parent_run_id: str = Field(min_length=1, description="AGT-002's run id")
    downstream_agent: str = Field(min_length=1, description='e.g. "message-generator"')
    entity_ids: list[str] = Field(min_length=1, description="contacts/deals/recordings in scope")
    angle: OutboundAngle
    tier: SequenceTier
    kc_bucket_hints: list[KcDomainId] = Field(
        default_factory=list, description="KC domains to prioritise in retrieval"
    )
