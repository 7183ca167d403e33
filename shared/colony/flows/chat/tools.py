"""The tools AGT-001 may call: definitions (JSON schema from the argument models) and runners.

    tool                 gated  what it does
    launch_campaign      yes    creates the campaign and its run row, dispatches AGT-002
                                (refused, saying why, while the org's budget is spent)
    research_company     yes    asks for a company's research (``colony.flows.research``,
                                requested by the person who approved it)
    pipeline_snapshot    no     SQL aggregates (deals by stage, runs, queue, outbox)
    search_knowledge     no     Knowledge Core top-k, optionally one domain
    list_approvals       no     the approval queue (people decide items on their cards:
                                no tool approves or rejects anything, CONST-001)
    propose_decision     no     a decision for a person to confirm on a card: the tool
                                records the proposal and decides nothing
    ask_content_agent    no     dispatch only: a request on ``colony-content`` (AGT-008)
    contact_signals      no     a contact's stored AGT-003 signals, strongest first, each
                                with its quote, source and confidence (untrusted data)

A gated tool never runs inside the turn: the turn writes a ``tool_action`` approval item and
pauses; approving the item runs the tool (``colony.flows.chat.resume.apply_tool_action``),
with the approving person as ``ToolContext.approved_by``.
Every runner is idempotent on its call id (deterministic ids, ``ON CONFLICT DO NOTHING``),
because an approval may be retried after a failed commit.

The tools live in the chat flow, not beside the HTTP edge, because they are flow actions:
they call other flows (the approval queue, the Knowledge Core) and publish to other agents. So
``colony.flows`` never imports ``colony.chat``, and the edge is the only way down into them.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from colony.contracts import ToolDefinition
from colony.contracts.chat import (
    AskContentArgs,
    ContactSignalsArgs,
    LaunchCampaignArgs,
    ListApprovalsArgs,
    PipelineSnapshotArgs,
    ProposeDecisionArgs,
    ResearchCompanyArgs,
    SearchKnowledgeArgs,
)
from colony.errors import CallerError, Forbidden, ValidationFailed
from colony.flows.approvals.approval_kinds import HELD_TOOLS, tool_arguments
from colony.flows.approvals.approval_queue import pending_cards
from colony.flows.deps import FlowDeps
from colony.flows.outbound import postal_address
from colony.flows.research import requests as research
from colony.flows.tenants import budget
from colony.knowledge.exemplars import to_exemplars
from colony.registry.functions import CAMPAIGN_TOPIC, CONTENT_TOPIC
from colony.runtime.transport import publish
from colony.store import chat_events
from colony.store.approvals import approvals
from colony.store.campaigns import campaigns, signals
from colony.store.insights import pipeline

SNIPPET_CHARS = 240


@dataclass(frozen=True)
class ToolContext:
    """Who runs a tool call, in which session, and the call's id."""

    deps: FlowDeps
    org_id: str
    user_id: str
    session_id: str
    call_id: str
    approved_by: str | None = None  # the person whose approval runs a gated tool


Runner = Callable[[ToolContext, Any], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    """One of AGT-001's tools: its name and description for the model, its arguments' model
    and what running it does."""

    name: str
    description: str
    args: type[BaseModel]
    run: Runner

    @property
    def gated(self) -> bool:
        """Held for a person's approval; which tools are, and what a person may edit on the
        held action's card, is the approvals' rule (``colony.flows.approvals.approval_kinds``)."""
        return self.name in HELD_TOOLS

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.args.model_json_schema(),
        }


class UnknownTool(ValidationFailed):
    code = "unknown_tool"


def parse_args(tool_name: str, arguments: Mapping[str, Any]) -> tuple[Tool, BaseModel]:
    """The tool and its validated arguments; errors name fields, never echo values."""
    tool = TOOLS.get(tool_name)
    if tool is None:
        raise UnknownTool(f"there is no tool named {tool_name!r}")
    return tool, tool_arguments(tool_name, tool.args, arguments)


def _stable_id(prefix: str, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]
    return f"{prefix}-{digest}"


# ─── launch_campaign (gated) ─────────────────────────────────────────────────────────────


def launch_campaign(ctx: ToolContext, args: LaunchCampaignArgs) -> dict[str, Any]:
    # lazy: event models (~15 ms of pydantic) load when a tool publishes
    from colony.contracts.events import CampaignStart

    budget.check_launch(ctx.deps, ctx.org_id)  # the model is told why, and says so
    postal_address.require(ctx.deps, ctx.org_id)
    campaign_id = _stable_id("cmp", ctx.org_id, ctx.call_id)
    run_id = _stable_id("run", ctx.org_id, ctx.call_id)
    wanted = args.contact_external_ids
    name = args.name or f"{args.angle} outreach, {args.tier}"
    # Its own transaction, committed before the dispatch: AGT-002 must find the rows.
    with ctx.deps.db.transaction(ctx.org_id) as cur:
        ids = campaigns.contacts_for_launch(cur, wanted)
        if not ids:
            raise ValidationFailed("no prospects match; name existing contacts (P-001…)")
        campaigns.launch(
            cur,
            ctx.org_id,
            campaign_id,
            run_id,
            name=name,
            angle=args.angle,
            tier=args.tier,
            contact_ids=ids,
        )
    event = CampaignStart(org_id=ctx.org_id, campaign_id=campaign_id, run_id=run_id)
    message_id = publish(ctx.deps.transport, CAMPAIGN_TOPIC, event)
    return {
        "campaign_id": campaign_id,
        "run_id": run_id,
        "name": name,
        "contacts": len(ids),
        "angle": args.angle,
        "tier": args.tier,
        "dispatched": message_id,
    }


# ─── research_company (gated) ────────────────────────────────────────────────────────────


def research_company(ctx: ToolContext, args: ResearchCompanyArgs) -> dict[str, Any]:
    """Research the company now (``args.domain`` is already the domain research keys): a pass
    is started (one task on ``colony-research``), joined while it runs, or found fresh.
    Asked for by the approving person, as if they had asked the admin API: a retried approval
    joins the pass its first attempt started."""
    if ctx.approved_by is None:  # gated: only a person's approval (``resume``) runs it
        raise Forbidden("research_company runs only when a person approves it")
    state = research.request(
        ctx.deps, ctx.org_id, args.domain, requested_by=ctx.approved_by, force=args.force
    )
    return {"domain": args.domain, "state": state, "force": args.force}


# ─── pipeline_snapshot ───────────────────────────────────────────────────────────────────


def pipeline_snapshot(ctx: ToolContext, args: PipelineSnapshotArgs) -> dict[str, Any]:
    with ctx.deps.db.transaction(ctx.org_id) as cur:
        row = pipeline.snapshot(cur)
    stages = {
        k: {"deals": int(v["deals"]), "value": float(v["value"])}
        for k, v in (row["deals_by_stage"] or {}).items()
    }
    return {
        "deals_by_stage": stages,
        "runs": row["runs"],
        "outbox": row["outbox"],
        "approvals_pending": int(row["approvals_pending"]),
        "contacts": int(row["contacts"]),
    }


# ─── search_knowledge ────────────────────────────────────────────────────────────────────

ALL_DOMAINS = tuple(f"KC-{n:02d}" for n in range(1, 11))


def search_knowledge(ctx: ToolContext, args: SearchKnowledgeArgs) -> dict[str, Any]:
    domains = [args.domain] if args.domain else list(ALL_DOMAINS)
    hits = ctx.deps.knowledge.retrieve(ctx.org_id, args.query, domains, args.k)
    found = to_exemplars(hits, top=args.k)
    return {
        "query": args.query,
        "results": [
            {
                "domain": e.domain,
                "title": e.title,
                "similarity": e.similarity,
                "snippet": _snippet(e.content),
            }
            for e in found
        ],
    }


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


# ─── contact_signals ─────────────────────────────────────────────────────────────────────


def contact_signals(ctx: ToolContext, args: ContactSignalsArgs) -> dict[str, Any]:
    """What AGT-003 found about one contact, with where each signal was read."""
    with ctx.deps.db.transaction(ctx.org_id) as cur:
        found = signals.find_contact(cur, args.contact)
        if not found:
            raise ValidationFailed(f"no contact matches {args.contact[:80]!r}")
        if len(found) > 1 and found[0]["id"] != args.contact:
            names = ", ".join(f"{c['name']} ({c['company']})" for c in found)
            raise ValidationFailed(f"{args.contact[:80]!r} matches more than one contact: {names}")
        contact = found[0]
        kept = signals.for_contact(cur, contact["id"], args.limit)
    return {
        "contact": {k: contact[k] for k in ("id", "name", "title", "company")},
        "signals": [
            {k: s[k] for k in ("type", "detail", "quote", "source", "confidence", "observed_on")}
            for s in kept
        ],
    }


# ─── approvals ───────────────────────────────────────────────────────────────────────────


def list_approvals(ctx: ToolContext, args: ListApprovalsArgs) -> dict[str, Any]:
    """The queue as /overview shows it (kit links freshly signed; ``mine``: the asker's own)."""
    return pending_cards(ctx.deps, ctx.org_id, **args.model_dump(), viewer=ctx.user_id)


def propose_decision(ctx: ToolContext, args: ProposeDecisionArgs) -> dict[str, Any]:
    """A proposal the chat shows as a card; only the person's confirmation on it decides
    (``POST /approvals`` with this call as its ``proposal``). The orchestrator's own held
    actions have their own cards and are not proposed."""
    with ctx.deps.db.transaction(ctx.org_id) as cur:
        found = approvals.statuses(cur, [args.item_id])
        kind = approvals.kind_of(cur, args.item_id) if found else None
    if not found:
        raise ValidationFailed(f"there is no approval item {args.item_id!r}")
    if found[args.item_id] != "pending":
        raise ValidationFailed(f"approval item {args.item_id!r} is already decided")
    if kind == "tool_action":
        raise ValidationFailed("a held chat action is decided on its own card")
    return {
        "proposal": {"item_id": args.item_id, "action": args.action, "reason": args.reason},
        "decided": False,
        "next": "the person confirms or dismisses it on the card",
    }


def proposed(
    deps: FlowDeps, org_id: str, session_id: str, call_id: str, item_id: str, action: str
) -> bool:
    """Whether the session's call ``call_id`` proposed exactly this decision (what a
    ``chat-confirmed`` decision confirms)."""
    with deps.db.transaction(org_id) as cur:
        event = chat_events.tool_result(cur, session_id, call_id)
    if event is None or event.get("name") != "propose_decision" or not event.get("ok"):
        return False
    proposal = (event.get("result") or {}).get("proposal") or {}
    return bool(proposal.get("item_id") == item_id and proposal.get("action") == action)


# ─── ask_content_agent (dispatch only) ───────────────────────────────────────────────────


def ask_content_agent(ctx: ToolContext, args: AskContentArgs) -> dict[str, Any]:
    # lazy: event models (~15 ms of pydantic) load when a tool publishes
    from colony.contracts.events import ContentRequest

    request_id = _stable_id("content", ctx.org_id, ctx.call_id)
    event = ContentRequest(
        org_id=ctx.org_id, request_id=request_id, topic=args.topic, format=args.format
    )
    message_id = publish(ctx.deps.transport, CONTENT_TOPIC, event)
    return {
        "request_id": request_id,
        "dispatched": message_id,
        "topic": args.topic,
        "format": args.format,
    }


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "launch_campaign",
            "Launch an outbound campaign (angle × tier) over named prospects or all of them. "
            "Needs a person's approval before it runs.",
            LaunchCampaignArgs,
            launch_campaign,  # gated: HELD_TOOLS holds it for a person's approval
        ),
        Tool(
            "research_company",
            "Research a company's website (domain or URL) so agents can quote its pages. "
            "Needs a person's approval before it runs.",
            ResearchCompanyArgs,
            research_company,  # gated: HELD_TOOLS holds it for a person's approval
        ),
        Tool(
            "pipeline_snapshot",
            "Current pipeline: deals by stage with value, campaign runs, approval queue, "
            "outbox. SQL, exact numbers.",
            PipelineSnapshotArgs,
            pipeline_snapshot,
        ),
        Tool(
            "search_knowledge",
            "Search the Knowledge Core (optionally one domain KC-01..KC-10).",
            SearchKnowledgeArgs,
            search_knowledge,
        ),
        Tool("list_approvals", "List pending approval items.", ListApprovalsArgs, list_approvals),
        Tool(
            "contact_signals",
            "A contact's buying signals (by id, name or company), strongest first, each with"
            " the quote it rests on, its source and confidence.",
            ContactSignalsArgs,
            contact_signals,
        ),
        Tool(
            "propose_decision",
            "Propose approving or rejecting one pending item; the person decides on its card.",
            ProposeDecisionArgs,
            propose_decision,
        ),
        Tool(
            "ask_content_agent",
            "Ask the content agent (AGT-008) for a piece; its draft lands in the approval queue.",
            AskContentArgs,
            ask_content_agent,
        ),
    )
}


@functools.cache
def definitions() -> tuple[ToolDefinition, ...]:
    """The tools as the model is offered them, built once: their argument schemas are fixed,
    and pydantic builds a schema anew on every ``model_json_schema`` (about 4 ms for these
    eight, on the path to every model call and so to the first delta)."""
    return tuple(ToolDefinition(**t.definition()) for t in TOOLS.values())


def run(tool: Tool, ctx: ToolContext, args: BaseModel) -> dict[str, Any]:
    """Run a tool: its result, or ``{"error": {...}}`` for a caller error (the model sees
    it and can explain it; nothing half-done, since every runner writes in one transaction
    before it dispatches). An ``InternalError`` is ours to fix, not the model's to explain:
    it propagates."""
    try:
        return {"ok": True, "result": tool.run(ctx, args)}
    except CallerError as error:
        return {"ok": False, "error": {"code": error.code, "message": str(error)}}


def refusal(tool: Tool, deps: FlowDeps, org_id: str) -> dict[str, Any] | None:
    """What a gated tool would answer now, when it is sure to be refused, so no person is
    asked to approve it (a launch while the org's spent budget holds campaign work back);
    None: ask."""
    if tool.name != "launch_campaign":
        return None
    try:
        budget.check_launch(deps, org_id)
    except CallerError as error:
        return {"ok": False, "error": {"code": error.code, "message": str(error)}}
    return None


def new_call_id() -> str:
    return f"call-{uuid.uuid4().hex[:16]}"
