"""The agent registry, AGT-001..AGT-010 (SPEC §4): what each agent is, reads, writes and obeys.

Every other part reads this: the assembler (role, domains, constraints), the functions
(triggers), terraform checks and the knowledge graph (reads/writes edges).
"""

from __future__ import annotations

from dataclasses import dataclass

from colony.errors import ValidationFailed


@dataclass(frozen=True, slots=True)
class Agent:
    id: str
    name: str
    slug: str  # the HandoffEnvelope.downstream_agent name
    primary_task: str
    trigger: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    kc_domains: tuple[str, ...]
    constraints: tuple[str, ...]
    output: str  # contract name in colony.contracts.OUTPUT_CONTRACTS
    template: str  # prompt template name under colony/context/prompts/


AGENTS: dict[str, Agent] = {
    a.id: a
    for a in (
        Agent(
            "AGT-001", "GTM Orchestrator", "gtm-orchestrator",
            "answering the founders at /overview and dispatching work to the other agents",
            "HTTP /overview chat (SSE)", ("ENT-008", "ENT-009", "ENT-011", "ENT-007"),
            ("ENT-008", "ENT-005"), (), ("CONST-003",), "conversation_summary", "orchestrator",
        ),
        Agent(
            "AGT-002", "Campaign Orchestrator", "campaign-orchestrator",
            "running campaigns: loading contacts, filtering anti-ICP, handing off to specialists",
            "Pub/Sub (tool dispatch, Cloud Tasks resume)", ("ENT-005", "ENT-004", "ENT-002"),
            ("ENT-005",), (), ("CONST-002", "CONST-005"), "missing_data", "orchestrator",
        ),
        Agent(
            "AGT-003", "Prospect Enrichment", "prospect-enrichment",
            "summarising a prospect's enrichment data and the buying signals it contains",
            "Pub/Sub handoff", ("ENT-002",), ("ENT-002",), ("KC-03",),
            ("CONST-003", "CONST-004"), "prospect_enrichment", "enrichment",
        ),
        Agent(
            "AGT-004", "Qualification", "qualification",
            "scoring prospects against ZoomProp's ICP rubric",
            "Pub/Sub handoff", ("ENT-002", "ENT-010"), ("ENT-002",), ("KC-02",),
            ("CONST-002",), "qualification_score", "qualification",
        ),
        Agent(
            "AGT-005", "Message Generator", "message-generator",
            "writing outbound sequence messages in the requested angle and tier",
            "Pub/Sub handoff", ("ENT-002", "ENT-004"), ("ENT-011",), ("KC-08", "KC-04", "KC-07"),
            ("CONST-001", "CONST-002", "CONST-006"), "outbound_message", "message_generator",
        ),
        Agent(
            "AGT-006", "Recording Intelligence", "recording-intelligence",
            "extracting signals, summaries and CRM updates from sales call transcripts",
            "Pub/Sub from the Drive webhook", ("ENT-006", "ENT-003"), ("ENT-006", "ENT-011"),
            ("KC-09", "KC-04", "KC-06"), ("CONST-001", "CONST-004"), "call_summary",
            "recording_pass2",
        ),
        Agent(
            "AGT-007", "Post-Call Follow-up", "post-call-follow-up",
            "drafting the follow-up email after a sales call",
            "Pub/Sub after AGT-006", ("ENT-006", "ENT-003"), ("ENT-011",), ("KC-05", "KC-04"),
            ("CONST-001", "CONST-006"), "follow_up_draft", "follow_up",
        ),
        Agent(
            "AGT-008", "Content", "content",
            "writing marketing content grounded in the product, proof points and brand voice",
            "Pub/Sub (orchestrator tool)", ("ENT-010",), ("ENT-011",), ("KC-01", "KC-05", "KC-07"),
            ("CONST-001", "CONST-006"), "content_piece", "content",
        ),
        Agent(
            "AGT-009", "Onboarding / Deployment Kit", "onboarding",
            "building the deployment kit for a customer whose deal closed",
            "Pub/Sub on deal closed-won", ("ENT-003", "ENT-001"), ("ENT-011",), ("KC-10",),
            ("CONST-001",), "deployment_kit", "deployment_kit",
        ),
        Agent(
            "AGT-010", "Analytics", "analytics",
            "writing the founders' daily GTM brief from SQL aggregates",
            "Cloud Scheduler → HTTP", ("ENT-009",), ("ENT-009",), ("KC-01",), ("CONST-004",),
            "daily_brief", "daily_brief",
        ),
    )
}  # fmt: skip

# Extra prompt profiles of agents with more than one LLM pattern.
PROFILES: dict[str, tuple[str, str, str]] = {
    # profile: (agent id, output contract, template)
    "AGT-006/pass1": ("AGT-006", "call_signals", "recording_pass1"),
    "AGT-006/pass2": ("AGT-006", "call_summary", "recording_pass2"),
    "AGT-001/summary": ("AGT-001", "conversation_summary", "conversation_summary"),
}


def agent(agent_id: str) -> Agent:
    try:
        return AGENTS[agent_id]
    except KeyError:
        raise ValidationFailed(f"unknown agent {agent_id!r}; expected AGT-001..AGT-010") from None


def agent_by_slug(slug: str) -> Agent:
    for a in AGENTS.values():
        if a.slug == slug:
            return a
    raise ValidationFailed(f"unknown downstream agent {slug!r}")
