"""The demo scenario's context bundles: one realistic assembly request per LLM profile.

Built from the demo org in the database and the Knowledge Core, the way the flows do it:
retrieval limited to each agent's KC domains (its bucket hints), compact entities, a task.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.contracts import IcpDefinition, OrgContext
from colony.flows.campaigns.message_generator import DEFAULT_COMPETITORS as COMPETITORS
from colony.knowledge import KnowledgeStore
from colony.knowledge.exemplars import to_exemplars
from colony.local.demo import DEMO_DIR
from colony.ports import Message
from colony.registry import DOMAINS
from colony.registry.agents import AGENTS
from colony.store import Database, orgdata

# What each profile asks the Knowledge Core, and how many exemplars it takes.
QUERIES: dict[str, tuple[str, int]] = {
    "AGT-001": ("what needs my attention in the pipeline today", 3),
    "AGT-003": ("buyer persona for a VP of real estate at a health system", 2),
    "AGT-004": ("ICP scoring rubric and anti-ICP rules", 2),
    "AGT-005": ("outbound email about a new outpatient expansion signal", 3),
    "AGT-006/pass2": ("objections about integration and price on discovery calls", 3),
    "AGT-007": ("proof points and objection answers for a follow-up email", 3),
    "AGT-008": ("lease savings proof points in ZoomProp's brand voice", 3),
    "AGT-009": ("onboarding playbook for a new health system", 3),
    "AGT-010": ("product positioning summary", 1),
}


def transcript_text() -> str:
    return (DEMO_DIR / "transcripts" / "discovery_mercy_ridge.txt").read_text(encoding="utf-8")


def demo_requests(
    db: Database, knowledge: KnowledgeStore, org_id: str, *, run_id: str = "demo-run"
) -> dict[str, AssemblyRequest]:
    with db.transaction(org_id) as cur:
        icp_row = orgdata.active_icp(cur)
        contacts = orgdata.contacts(cur)
        deals = orgdata.deals(cur)
        name = orgdata.org_name(cur)
        library = orgdata.sequence_steps(cur, "Signal", "T1")
    icp = IcpDefinition(**icp_row) if icp_row else None
    org = OrgContext(org_name=name, icp=icp)
    contact = next(c for c in contacts if c["external_id"] == "P-001")
    discovery = next(d for d in deals if d["stage"] == "discovery")
    won = next(d for d in deals if d["stage"] == "closed_won")
    today = date.today().isoformat()

    def domains_of(profile: str) -> tuple[str, ...]:
        # AGT-001 may draw on any domain: the best `top` across all of them (SPEC §4).
        return tuple(AGENTS[profile.split("/")[0]].kc_domains or DOMAINS)

    def exemplars(profile: str) -> list[Any]:
        text, top = QUERIES[profile]
        return to_exemplars(knowledge.retrieve(org_id, text, domains_of(profile), top), top=top)

    words = transcript_text().split()
    signals = [
        {
            "type": "budget_signals",
            "quote": "about $300K pencilled into the 2027 budget",
            "confidence": 0.9,
        },
        {
            "type": "objection_signals",
            "quote": "integration with Epic and ServiceNow worries us",
            "confidence": 0.8,
        },
    ]

    def req(profile: str, **parts: Any) -> AssemblyRequest:
        return AssemblyRequest(profile, org_id, run_id, org, **parts)

    def grounded(profile: str, **parts: Any) -> AssemblyRequest:
        """A request with the profile's exemplars retrieved from the Knowledge Core."""
        return req(profile, exemplars=exemplars(profile), kc_queried=domains_of(profile), **parts)

    morning = [
        Message("user", "Morning. Anything urgent?"),
        Message("assistant", "Two approvals are waiting: D-002 follow-up and a KC-09 candidate."),
    ]
    deal_context = f"{discovery['stage']} | {discovery['value']} | {discovery['next_action']}"
    recording_summary = (
        "Mercy Ridge has budget for 2027 and worries about"
        " Epic integration; the CFO signs above $250K."
    )
    snapshot = {"deals_by_stage": {d["stage"]: 1 for d in deals}, "approval_queue_count": 0}
    earlier_turns = "user: launch the Signal campaign for T1\nassistant: launched run R-1"
    return {
        "AGT-001": grounded(
            "AGT-001",
            entities={"pipeline": deals},
            history=morning,
            task={"message": "Launch the Signal campaign for T1 health systems."},
        ),
        "AGT-003": grounded("AGT-003", entities={"contact": contact}),
        "AGT-004": grounded(
            "AGT-004",
            entities={
                "contact": contact,
                "icp_rubric": icp.rubric if icp else {},
            },
            task={"today": today},
        ),
        "AGT-005": grounded(
            "AGT-005",
            entities={"contact": contact},
            task={
                "angle": "Signal",
                "tier": "T1",
                "step": 1,
                "channel": library[0]["channel"] if library else "email",
                "guidance": library[0]["guidance"] if library else "(none)",
                "competitors": list(COMPETITORS),
            },
        ),
        "AGT-006/pass1": req(
            "AGT-006/pass1",
            task={
                "chunk": " ".join(words[:1500]),
                "segment_label": "chunk 1",
                "competitors": list(COMPETITORS),
            },
        ),
        "AGT-006/pass2": grounded(
            "AGT-006/pass2",
            entities={"deal": discovery},
            task={"signals_json": signals, "deal_context": deal_context},
        ),
        "AGT-007": grounded(
            "AGT-007",
            entities={"deal": discovery, "contact": contact},
            task={"recording_summary": recording_summary},
        ),
        "AGT-008": grounded(
            "AGT-008",
            task={
                "format": "linkedin_post",
                "topic": "what lease exits taught a health system",
                "competitors": list(COMPETITORS),
            },
        ),
        "AGT-009": grounded("AGT-009", entities={"deal": won}),
        "AGT-010": grounded(
            "AGT-010",
            entities={"data_snapshot": snapshot},
            history=[Message("system", "Yesterday's brief: no brief on record.")],
            task={"brief_date": today},
        ),
        "AGT-001/summary": req(
            "AGT-001/summary",
            task={"previous_summary": "(none)", "turns": earlier_turns},
        ),
    }
