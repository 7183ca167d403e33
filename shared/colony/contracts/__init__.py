"""Pydantic models shared by everything: the bundle, the envelope, every agent output.

Boundary models forbid unknown fields (``extra="forbid"``) so drift fails loudly.
"""

from colony.contracts.bundle import (
    AgentContextBundle,
    Exemplar,
    IcpDefinition,
    OrgContext,
    SequenceStep,
    ToolDefinition,
)
from colony.contracts.common import ANGLES, TIERS, OutboundAngle, SequenceTier, Strict
from colony.contracts.envelope import HandoffEnvelope
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
