"""Every agent's structured output (seed §5, §6.3, §6.4; CONST-002, CONST-004): the JSON
contracts the models are asked for and the runner validates against, one module per
capability that asks for them (``common``: what any answer may be; ``campaigns``;
``recordings``; ``documents``; the chat's reply is ``colony.contracts.chat``'s).

Deterministic policy that no model may be trusted with (CONST-006 message shape) lives in
``colony.policy.outbound``; what is here is what a schema can say.

``OUTPUT_CONTRACTS`` maps each contract's name to its model, and a name, like each model here
(PEP 562), loads its module on first use: a function validates its own agent's answer without
creating every agent's models at its cold start (issue 32 item 4).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import TYPE_CHECKING

from colony.lazy import lazy_names

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.contracts.common import Strict
    from colony.contracts.outputs.campaigns import (
        CompanyFact,
        DimensionScores,
        OutboundMessage,
        ProspectEnrichment,
        ProspectSignal,
        QualificationScore,
    )
    from colony.contracts.outputs.common import KcUpdateCandidate, MissingData, Name, Note
    from colony.contracts.outputs.documents import (
        ContentPiece,
        ConversationSummary,
        DailyBrief,
        DeploymentKit,
        KitSection,
    )
    from colony.contracts.outputs.recordings import (
        CallKnowledge,
        CallSignal,
        CallSignals,
        CallSummary,
        CrmFieldUpdates,
        FollowUpDraft,
        SignalType,
    )

_CAMPAIGNS = "colony.contracts.outputs.campaigns"
_COMMON = "colony.contracts.outputs.common"
_DOCUMENTS = "colony.contracts.outputs.documents"
_RECORDINGS = "colony.contracts.outputs.recordings"
_HOMES = {
    "CallKnowledge": _RECORDINGS,
    "CallSignal": _RECORDINGS,
    "CallSignals": _RECORDINGS,
    "CallSummary": _RECORDINGS,
    "CompanyFact": _CAMPAIGNS,
    "ContentPiece": _DOCUMENTS,
    "ConversationSummary": _DOCUMENTS,
    "CrmFieldUpdates": _RECORDINGS,
    "DailyBrief": _DOCUMENTS,
    "DeploymentKit": _DOCUMENTS,
    "DimensionScores": _CAMPAIGNS,
    "FollowUpDraft": _RECORDINGS,
    "KcUpdateCandidate": _COMMON,
    "KitSection": _DOCUMENTS,
    "MissingData": _COMMON,
    "Name": _COMMON,
    "Note": _COMMON,
    "OutboundMessage": _CAMPAIGNS,
    "ProspectEnrichment": _CAMPAIGNS,
    "ProspectSignal": _CAMPAIGNS,
    "QualificationScore": _CAMPAIGNS,
    "SignalType": _RECORDINGS,
}

# Contract name → (module, model), for prompts, schemas and the offline provider.
_CONTRACTS: dict[str, tuple[str, str]] = {
    "qualification_score": (_CAMPAIGNS, "QualificationScore"),
    "prospect_enrichment": (_CAMPAIGNS, "ProspectEnrichment"),
    "outbound_message": (_CAMPAIGNS, "OutboundMessage"),
    "call_signals": (_RECORDINGS, "CallSignals"),
    "call_summary": (_RECORDINGS, "CallSummary"),
    "follow_up_draft": (_RECORDINGS, "FollowUpDraft"),
    "content_piece": (_DOCUMENTS, "ContentPiece"),
    "deployment_kit": (_DOCUMENTS, "DeploymentKit"),
    "daily_brief": (_DOCUMENTS, "DailyBrief"),
    "conversation_summary": (_DOCUMENTS, "ConversationSummary"),
    "missing_data": (_COMMON, "MissingData"),
    "kc_update_candidate": (_COMMON, "KcUpdateCandidate"),
    "orchestrator_reply": ("colony.contracts.chat", "OrchestratorReply"),  # AGT-001's turn
}


class _Contracts(Mapping[str, "type[Strict]"]):
    """Contract name → model, read from the model's module on lookup (imports are cached)."""

    def __getitem__(self, name: str) -> type[Strict]:
        module, model = _CONTRACTS[name]
        found: type[Strict] = getattr(import_module(module), model)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(_CONTRACTS)

    def __len__(self) -> int:
        return len(_CONTRACTS)


OUTPUT_CONTRACTS: Mapping[str, type[Strict]] = _Contracts()

__all__ = [
    "OUTPUT_CONTRACTS",
    "CallKnowledge",
    "CallSignal",
    "CallSignals",
    "CallSummary",
    "CompanyFact",
    "ContentPiece",
    "ConversationSummary",
    "CrmFieldUpdates",
    "DailyBrief",
    "DeploymentKit",
    "DimensionScores",
    "FollowUpDraft",
    "KcUpdateCandidate",
    "KitSection",
    "MissingData",
    "Name",
    "Note",
    "OutboundMessage",
    "ProspectEnrichment",
    "ProspectSignal",
    "QualificationScore",
    "SignalType",
]


__getattr__ = lazy_names(__name__, _HOMES)
