"""Pydantic models shared by everything: the bundle, the envelope, every agent output.

Boundary models forbid unknown fields (``extra="forbid"``) so drift fails loudly.
"""

from typing import TYPE_CHECKING

from colony.lazy import lazy_names

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.contracts.bundle import (
        AgentContextBundle,
        Exemplar,
        IcpDefinition,
        OrgContext,
        SequenceStep,
        ToolDefinition,
    )
    from colony.contracts.common import (
        ANGLES,
        TIERS,
        OutboundAngle,
        SequenceTier,
        Strict,
    )
    from colony.contracts.envelope import (
        HandoffEnvelope,
    )
    from colony.contracts.outputs import (
        OUTPUT_CONTRACTS,
        CallSignal,
        CallSignals,
        CallSummary,
        ContentPiece,
        ConversationSummary,
        CrmFieldUpdates,
        DailyBrief,
        DeploymentKit,
        DimensionScores,
        FollowUpDraft,
        KcUpdateCandidate,
        MissingData,
        OutboundMessage,
        ProspectEnrichment,
        QualificationScore,
    )

# Loaded on first use (PEP 562): a function that only decodes events does not pay for every
# agent's output models at cold start.
_HOMES = {
    "ANGLES": "colony.contracts.common",
    "AgentContextBundle": "colony.contracts.bundle",
    "CallSignal": "colony.contracts.outputs.recordings",
    "CallSignals": "colony.contracts.outputs.recordings",
    "CallSummary": "colony.contracts.outputs.recordings",
    "ContentPiece": "colony.contracts.outputs.documents",
    "ConversationSummary": "colony.contracts.outputs.documents",
    "CrmFieldUpdates": "colony.contracts.outputs.recordings",
    "DailyBrief": "colony.contracts.outputs.documents",
    "DeploymentKit": "colony.contracts.outputs.documents",
    "DimensionScores": "colony.contracts.outputs.campaigns",
    "Exemplar": "colony.contracts.bundle",
    "FollowUpDraft": "colony.contracts.outputs.recordings",
    "HandoffEnvelope": "colony.contracts.envelope",
    "IcpDefinition": "colony.contracts.bundle",
    "KcUpdateCandidate": "colony.contracts.outputs.common",
    "MissingData": "colony.contracts.outputs.common",
    "OUTPUT_CONTRACTS": "colony.contracts.outputs",
    "OrgContext": "colony.contracts.bundle",
    "OutboundAngle": "colony.contracts.common",
    "OutboundMessage": "colony.contracts.outputs.campaigns",
    "ProspectEnrichment": "colony.contracts.outputs.campaigns",
    "QualificationScore": "colony.contracts.outputs.campaigns",
    "SequenceStep": "colony.contracts.bundle",
    "SequenceTier": "colony.contracts.common",
    "Strict": "colony.contracts.common",
    "TIERS": "colony.contracts.common",
    "ToolDefinition": "colony.contracts.bundle",
}

__all__ = [
    "ANGLES",
    "OUTPUT_CONTRACTS",
    "TIERS",
    "AgentContextBundle",
    "CallSignal",
    "CallSignals",
    "CallSummary",
    "ContentPiece",
    "ConversationSummary",
    "CrmFieldUpdates",
    "DailyBrief",
    "DeploymentKit",
    "DimensionScores",
    "Exemplar",
    "FollowUpDraft",
    "HandoffEnvelope",
    "IcpDefinition",
    "KcUpdateCandidate",
    "MissingData",
    "OrgContext",
    "OutboundAngle",
    "OutboundMessage",
    "ProspectEnrichment",
    "QualificationScore",
    "SequenceStep",
    "SequenceTier",
    "Strict",
    "ToolDefinition",
]


__getattr__ = lazy_names(__name__, _HOMES)
