"""AGT-009 onboarding: a deployment kit for a deal that closed (SPEC §4; seed §3.4).

    deal.closed_won ─► the deal + KC-10 onboarding playbooks ─► AGT-009 ─► kit document
        ─► GCS (assets bucket) ─► V4 signed URL ─► ENT-011 deployment_kit item + kit row
    approved ─► released, and the kit's playbooks (not its deal summary) ─► KC-10 for the next deal

One kit per deal. Order matters for failure: the model's output is a durable step (a retry
never pays for it twice), then the document goes to GCS (same name, same bytes: a retried
upload overwrites itself), and only then are the kit row and its approval item written, in
one transaction under a lock on the deal. A GCS failure therefore leaves no kit or item
behind, and the redelivery completes it once. Agents and people get a signed URL, never
the bytes. The URL stored in the item expires (``COLONY_SIGNED_URL_TTL_SECONDS``); the object
name stays on the kit row, and every place that shows the item to a person signs a fresh link
from it (``colony.flows.approvals.approval_queue``).

Approving a kit grows KC-10 (``colony.flows.knowledge.kc_lifecycle.remember_kit``): the kit row
keeps the document's text as it was put in the bucket, so the approval, the release and the new
knowledge commit together without the approval function reading the bucket (it holds no storage
role: ``registry.functions``). The text is the same bytes, written in the same transaction as the
item a person approves, so what enters KC-10 is what they reviewed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.contracts import IcpDefinition, OrgContext
from colony.contracts.events import DealClosedWon
from colony.contracts.outputs.documents import DeploymentKit
from colony.errors import NotFound, UpstreamError, ValidationFailed
from colony.flows import call_link
from colony.flows.approvals import flags
from colony.flows.approvals.links import signed_link
from colony.flows.deps import FlowDeps
from colony.knowledge.exemplars import to_exemplars
from colony.llm.agent_call import call_agent
from colony.runtime import idempotency
from colony.runtime.steps import step
from colony.store import orgdata
from colony.store.approvals import approvals
from colony.store.deals import deals, kits

AGENT = "AGT-009"
HANDLER = "onboarding"
PLAYBOOKS = 3
CONTENT_TYPE = "text/markdown; charset=utf-8"


class DealNotReady(UpstreamError):
    """The deal is not closed_won (yet): the approval that closed it may still be committing,
    so the event is retried rather than dropped; the platform's attempts bound it."""

    code = "deal_not_ready"


def object_name(org_id: str, deal_id: str) -> str:
    return f"deployment-kits/{org_id}/{deal_id}.md"


def render_kit(kit: Mapping[str, Any]) -> str:
    """The kit document: Markdown, a title and one section per heading."""
    parts = [f"# {kit['title']}"]
    parts += [f"## {s['heading']}\n\n{s['body'].strip()}" for s in kit["sections"]]
    return "\n\n".join(parts) + "\n"


def build_kit(deps: FlowDeps, event: DealClosedWon, event_id: str) -> dict[str, Any]:
    org, deal_id = event.org_id, event.deal_id
    if idempotency.seen(deps.db, org, HANDLER, event_id):
        return {"duplicate": True}
    with deps.db.transaction(org) as cur:
        deal = deals.for_kit(cur, deal_id)
        existing = kits.of_deal(cur, deal_id)
    if deal is None:
        raise NotFound(f"deal {deal_id!r} does not exist in this org; no kit was built")
    if existing is not None:  # an earlier event already built it: nothing more to do
        idempotency.mark(deps.db, org, HANDLER, event_id, detail="kit exists")
        return {
            "kit_id": existing["id"],
            "approval_item_id": existing["approval_item_id"],
            "created": False,
        }
    if deal["stage"] != "closed_won":
        raise DealNotReady(f"deal {deal_id!r} is {deal['stage']!r}, not closed_won")

    run_id = f"onboarding:{deal_id}"
    kit = step(deps.db, org, run_id, "kit", lambda: _compose(deps, org, run_id, deal))
    name = object_name(org, deal_id)
    document = render_kit(kit)
    gcs_uri = deps.blobs.put(name, document.encode("utf-8"), CONTENT_TYPE)
    link = signed_link(deps, name)  # for the caller now; cards sign their own (approval_queue)
    url = link["url"]
    payload = {
        "deal_id": deal_id,
        "deal_name": deal["name"],
        "title": kit["title"],
        "sections": [s["heading"] for s in kit["sections"]],
        "gcs_uri": gcs_uri,
        "signed_url": url,
        "url_expires_in_seconds": link["expires_in_seconds"],
        "url_expires_at": link["expires_at"],
        "playbooks": kit.get("playbooks", []),
    }
    payload = flags.flagged(payload, kit.get(flags.KEY) or ())
    with deps.db.transaction(org) as cur:
        deals.lock(cur, deal_id)  # racing deliveries queue here
        raced = kits.of_deal(cur, deal_id)
        if raced is None:
            item_id = approvals.add(
                cur,
                org,
                "deployment_kit",
                AGENT,
                payload,
                subject_id=deal_id,
                run_id=run_id,
                call_id=call_link.take(kit)[1],
            )
            kit_id = kits.add(
                cur,
                org,
                deal_id,
                item_id,
                title=kit["title"],
                object_name=name,
                gcs_uri=gcs_uri,
                document=document,
            )
            result = {"kit_id": kit_id, "approval_item_id": item_id, "created": True}
        else:
            result = {
                "kit_id": raced["id"],
                "approval_item_id": raced["approval_item_id"],
                "created": False,
            }
    idempotency.mark(deps.db, org, HANDLER, event_id)
    return {**result, "signed_url": url, "gcs_uri": gcs_uri}


def playbook_query(deal: Mapping[str, Any]) -> str:
    """What AGT-009's KC-10 retrieval for ``deal`` searches with."""
    return " ".join(str(deal.get(k) or "") for k in ("name", "next_action", "company"))


def _compose(deps: FlowDeps, org: str, run_id: str, deal: Mapping[str, Any]) -> dict[str, Any]:
    hits = deps.knowledge.retrieve(org, playbook_query(deal), ("KC-10",), PLAYBOOKS)
    exemplars = to_exemplars(hits)
    if not exemplars:
        raise ValidationFailed("KC-10 holds no onboarding playbooks to build a kit from")
    with deps.db.transaction(org) as cur:
        icp = orgdata.active_icp(cur)
        name = orgdata.org_name(cur)
    facts = {
        "name": deal["name"],
        "stage": deal["stage"],
        "value": float(deal["value"]) if deal.get("value") is not None else None,
        "next_action": deal.get("next_action"),
        "close_date": deal["close_date"].isoformat() if deal.get("close_date") else None,
        "company": deal.get("company"),
        "contact_name": deal.get("contact_name"),
    }
    org_context = OrgContext(org_name=name, icp=IcpDefinition(**icp) if icp else None)
    request = AssemblyRequest(
        AGENT, org, run_id, org_context, exemplars, {"deal": facts}, (), {}, kc_queried=tuple(hits)
    )
    result = call_agent(deps.llm, request)
    assert isinstance(result.output, DeploymentKit)
    kit = result.output.model_dump(mode="json")
    found = [flags.of_draft(result, section) for section in kit["sections"]]
    playbooks = sorted({e.title for e in exemplars if e.title})
    return call_link.carry(flags.flagged({**kit, "playbooks": playbooks}, *found), result)


def apply_deployment_kit(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """Approved kit → released to the customer (idempotent: released once, stays released)
    and kept in KC-10 (``kc_lifecycle.remember_kit``; re-applying re-embeds nothing)."""
    from colony.flows.knowledge.kc_lifecycle import remember_kit  # lazy: kits approved only

    if not kits.release(cur, item_id):
        raise NotFound(f"approval item {item_id!r} has no deployment kit in this org")
    kit = kits.of_item(cur, item_id)
    assert kit is not None  # released just now, in this transaction
    remember_kit(deps, cur, org_id, item_id, kit, deals.for_kit(cur, str(kit["deal_id"])))


def onboarding_event(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """The ``onboarding`` function's Pub/Sub handler."""
    if not isinstance(event, DealClosedWon):
        raise ValidationFailed(f"onboarding does not take {type(event).__name__} events")
    return build_kit(deps, event, event_id)
