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
    "CallSignal": "colony.contracts.outputs",
    "CallSignals": "colony.contracts.outputs",
    "CallSummary": "colony.contracts.outputs",
    "ContentPiece": "colony.contracts.outputs",
    "ConversationSummary": "colony.contracts.outputs",
    "CrmFieldUpdates": "colony.contracts.outputs",
    "DailyBrief": "colony.contracts.outputs",
    "DeploymentKit": "colony.contracts.outputs",
    "DimensionScores": "colony.contracts.outputs",
    "Exemplar": "colony.contracts.bundle",
    "FollowUpDraft": "colony.contracts.outputs",
    "HandoffEnvelope": "colony.contracts.envelope",
    "IcpDefinition": "colony.contracts.bundle",
    "KcUpdateCandidate": "colony.contracts.outputs",
    "MissingData": "colony.contracts.outputs",
    "OUTPUT_CONTRACTS": "colony.contracts.outputs",
    "OrgContext": "colony.contracts.bundle",
    "OutboundAngle": "colony.contracts.common",
    "OutboundMessage": "colony.contracts.outputs",
    "ProspectEnrichment": "colony.contracts.outputs",
    "QualificationScore": "colony.contracts.outputs",
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
