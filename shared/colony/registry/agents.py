"""The agent registry, AGT-001..AGT-010 (SPEC §4): what each agent is, reads, writes and obeys.

Every other part reads this: the assembler (role, domains, constraints), the functions
(triggers), terraform checks and the knowledge graph (reads/writes edges).
"""

from __future__ import annotations

from dataclasses import dataclass

from colony.errors import ValidationFailed


@dataclass(frozen=True, slots=True)
class Agent:
    """One agent of the registry (AGT-xxx): what it does, what triggers it, what it reads and
    writes, its output contract and its prompt template."""

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
            id="AGT-001",
            name="GTM Orchestrator",
            slug="gtm-orchestrator",
            primary_task=(
                "answering the founders at /overview and dispatching work to the other agents"
            ),
            trigger="HTTP /overview chat (SSE)",
            reads=("ENT-008", "ENT-009", "ENT-011", "ENT-007"),
            writes=("ENT-008", "ENT-005"),
            kc_domains=(),
            constraints=("CONST-003",),
            output="orchestrator_reply",  # a chat turn; its summary is "AGT-001/summary"
            template="orchestrator",
        ),
        Agent(
            id="AGT-002",
            name="Campaign Orchestrator",
            slug="campaign-orchestrator",
            primary_task=(
                "running campaigns: loading contacts, filtering anti-ICP, "
                "handing off to specialists"
            ),
            trigger="Pub/Sub (tool dispatch, Cloud Tasks resume)",
            reads=("ENT-005", "ENT-004", "ENT-002"),
            writes=("ENT-005",),
            kc_domains=(),
            constraints=("CONST-002", "CONST-005"),
            output="missing_data",
            template="orchestrator",
        ),
        Agent(
            id="AGT-003",
            name="Prospect Enrichment",
            slug="prospect-enrichment",
            primary_task=(
                "summarising a prospect's enrichment data and the buying signals it contains"
            ),
            trigger="Pub/Sub handoff",
            reads=("ENT-002", "ENT-003"),  # ENT-003: the stage of the contact's deal, if any
            writes=("ENT-002",),
            kc_domains=("KC-03",),
            constraints=("CONST-003", "CONST-004"),
            output="prospect_enrichment",
            template="enrichment",
        ),
        Agent(
            id="AGT-004",
            name="Qualification",
            slug="qualification",
            primary_task="scoring prospects against ZoomProp's ICP rubric",
            trigger="Pub/Sub handoff",
            reads=("ENT-002", "ENT-003", "ENT-010"),
            writes=("ENT-002",),
            kc_domains=("KC-02",),
            constraints=("CONST-002",),
            output="qualification_score",
            template="qualification",
        ),
        Agent(
            id="AGT-005",
            name="Message Generator",
            slug="message-generator",
            primary_task=(
                "writing each step of an outbound sequence (an email, or a LinkedIn note or call"
                " talking points for a person) in the requested angle and tier"
            ),
            trigger="Pub/Sub handoff",
            # the contact, its deal's stage, its sequence's step, what it already got
            reads=("ENT-002", "ENT-003", "ENT-004", "ENT-012"),
            writes=("ENT-011",),
            kc_domains=("KC-08", "KC-04", "KC-07"),
            constraints=("CONST-001", "CONST-002", "CONST-006"),
            output="outbound_message",
            template="message_generator",
        ),
        Agent(
            id="AGT-006",
            name="Recording Intelligence",
            slug="recording-intelligence",
            primary_task=(
                "extracting signals, summaries and CRM updates from sales call transcripts"
            ),
            trigger="Pub/Sub from the Drive webhook",
            reads=("ENT-006", "ENT-003"),
            writes=("ENT-006", "ENT-011"),
            kc_domains=("KC-09", "KC-04", "KC-06"),
            constraints=("CONST-001", "CONST-004"),
            output="call_summary",
            template="recording_pass2",
        ),
        Agent(
            id="AGT-007",
            name="Post-Call Follow-up",
            slug="post-call-follow-up",
            primary_task="drafting the follow-up email after a sales call",
            trigger="Pub/Sub after AGT-006",
            reads=("ENT-006", "ENT-003"),
            writes=("ENT-011",),
            kc_domains=("KC-05", "KC-04"),
            constraints=("CONST-001", "CONST-006"),
            output="follow_up_draft",
            template="follow_up",
        ),
        Agent(
            id="AGT-008",
            name="Content",
            slug="content",
            primary_task=(
                "writing marketing content grounded in the product, proof points and brand voice"
            ),
            trigger="Pub/Sub (orchestrator tool)",
            reads=("ENT-010",),
            writes=("ENT-011",),
            kc_domains=("KC-01", "KC-05", "KC-07"),
            constraints=("CONST-001", "CONST-006"),
            output="content_piece",
            template="content",
        ),
        Agent(
            id="AGT-009",
            name="Onboarding / Deployment Kit",
            slug="onboarding",
            primary_task="building the deployment kit for a customer whose deal closed",
            trigger="Pub/Sub on deal closed-won",
            reads=("ENT-003", "ENT-001"),
            writes=("ENT-011",),
            kc_domains=("KC-10",),
            constraints=("CONST-001",),
            output="deployment_kit",
            template="deployment_kit",
        ),
        Agent(
            id="AGT-010",
            name="Analytics",
            slug="analytics",
            primary_task="writing the founders' daily GTM brief from SQL aggregates",
            trigger="Cloud Scheduler → HTTP",
            reads=("ENT-009",),
            writes=("ENT-009",),
            kc_domains=("KC-01",),
            constraints=("CONST-004",),
            output="daily_brief",
            template="daily_brief",
        ),
    )
}

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
