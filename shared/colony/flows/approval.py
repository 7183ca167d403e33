"""Flow 5, the approval callback (CONST-001; SPEC §6.5).

``decide`` approves, rejects or edits one approval item. Applying is idempotent: the outbox
row is unique per approval item, and deciding an already-decided item the same way again
returns its state unchanged; deciding it differently is a conflict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from colony.contracts import OutboundMessage
from colony.errors import Conflict, NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.policy.outbound import check_shape
from colony.store import approvals, campaigns, outbox

Action = Literal["approve", "reject", "edit"]

FINAL = {"approve": "applied", "edit": "applied", "reject": "rejected"}


def decide(
    deps: FlowDeps,
    org_id: str,
    item_id: str,
    action: Action,
    *,
    decided_by: str,
    edited: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    if action not in FINAL:
        raise ValidationFailed(f"unknown action {action!r}; expected approve, reject or edit")
    if action == "edit" and not edited:
        raise ValidationFailed("an edit needs the edited fields")
    if action != "edit" and edited:
        raise ValidationFailed("edited fields are only accepted with action 'edit'")
    with deps.db.transaction(org_id) as cur:
        item = approvals.lock(cur, item_id)
        if item is None:
            raise NotFound(f"approval item {item_id!r} does not exist in this org")
        if item["status"] in ("applied", "rejected"):
            if item["status"] == FINAL[action] and action != "edit":
                return {"id": item_id, "status": item["status"], "changed": False}
            raise Conflict(f"approval item {item_id!r} was already {item['status']}")
        payload = dict(item["payload"])
        if action == "edit":
            payload = _edited(item["kind"], payload, edited or {})
        status = FINAL[action]
        approvals.decide(cur, item_id, status, decided_by, payload if action == "edit" else None)
        if status == "applied":
            _apply(deps, cur, org_id, item_id, item["kind"], payload)
    return {"id": item_id, "status": status, "changed": True}


def _edited(kind: str, payload: dict[str, Any], edited: Mapping[str, Any]) -> dict[str, Any]:
    if kind != "outbound_message":
        return {**payload, **edited}
    allowed = {"subject", "body"}
    if set(edited) - allowed:
        raise ValidationFailed(f"only {sorted(allowed)} of a message can be edited")
    merged = {**payload, **edited}
    message = OutboundMessage.model_validate(
        {k: merged[k] for k in ("subject", "body", "angle_used", "signal_referenced")}
    )
    problems = check_shape(
        message.subject, message.body, tier=str(merged.get("tier", "T3")), competitors=[]
    )
    if problems:
        raise ValidationFailed("the edited message breaks CONST-006: " + "; ".join(problems))
    return merged


def _to_outbox(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    campaign_id = payload.get("campaign_id")
    paused = False
    if campaign_id:
        # Share-locked: a breaker pause cannot commit between this read and the outbox insert.
        paused = campaigns.status_for_share(cur, campaign_id) == "paused"
    outbox.queue(
        cur,
        org_id,
        item_id,
        campaign_id=campaign_id,
        contact_id=payload.get("contact_id"),
        subject=payload["subject"],
        body=payload["body"],
        status="blocked" if paused else "queued",
    )


# What applying an approved item of each kind does. Each applier runs inside the decision's
# transaction (same cursor, same org) and must be idempotent.
Applier = Callable[[FlowDeps, Any, str, str, Mapping[str, Any]], None]


def applier(kind: str) -> Applier | None:
    """The applier of ``kind`` (None: approving it has no effect beyond the decision)."""
    # lazy (each branch): the approval function loads only the flow the decided item needs
    if kind == "outbound_message":
        return _to_outbox
    if kind == "kc_update_candidate":
        from colony.flows.kc_lifecycle import apply_kc_candidate  # lazy: (see above)

        return apply_kc_candidate
    if kind == "follow_up":
        from colony.flows.recording import apply_follow_up  # lazy: (see above)

        return apply_follow_up
    if kind == "deal_update":
        from colony.flows.deals import apply_deal_update  # lazy: (see above)

        return apply_deal_update
    if kind == "content_piece":
        from colony.flows.content import apply_content_piece  # lazy: (see above)

        return apply_content_piece
    if kind == "deployment_kit":
        from colony.flows.onboarding import apply_deployment_kit  # lazy: (see above)

        return apply_deployment_kit
    if kind == "tool_action":  # resumes the paused chat turn
        from colony.flows.chat.resume import apply_tool_action  # lazy: (see above)

        return apply_tool_action
    return None


def _apply(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, kind: str, payload: Mapping[str, Any]
) -> None:
    apply = applier(kind)
    if apply is not None:
        apply(deps, cur, org_id, item_id, payload)
