"""What approving an item of each kind does: the table that joins the approval queue to the
capabilities whose items it holds.

Deciding an item (``colony.flows.approvals``) knows no capability that made it: it asks its
``FlowDeps.applier(kind)``, and ``Deps`` answers from here. This table is composition, above
every capability, so a new kind is one line here and an ``apply_*`` function in the package
that queues it, and the capabilities keep pointing down at the approval queue, never back.

Each import is made on first use: the approval function loads only the flow that the
decided item needs. Every applier runs inside the decision's transaction (same cursor, same
org) and must be idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.flows.deps import Applier, FlowDeps


def applier(kind: str) -> Applier | None:
    """The applier of ``kind`` (None: approving it has no effect beyond the decision)."""
    # lazy (each branch): the approval function loads only the flow the decided item needs
    if kind == "outbound_message":  # queued to send, and kept as a KC-08 exemplar
        return _send_and_remember
    if kind == "kc_update_candidate":
        from colony.flows.knowledge.kc_lifecycle import apply_kc_candidate  # lazy: (see above)

        return apply_kc_candidate
    if kind == "follow_up":
        from colony.flows.recordings.follow_up import apply_follow_up  # lazy: (see above)

        return apply_follow_up
    if kind == "deal_update":
        from colony.flows.pipeline.deals import apply_deal_update  # lazy: (see above)

        return apply_deal_update
    if kind == "crm_conflict":  # a person keeps ours (written again) or HubSpot's
        from colony.flows.crm.deal_writes import apply_conflict  # lazy: (see above)

        return apply_conflict
    if kind == "content_piece":
        from colony.flows.content import apply_content_piece  # lazy: (see above)

        return apply_content_piece
    if kind == "deployment_kit":
        from colony.flows.pipeline.onboarding import apply_deployment_kit  # lazy: (see above)

        return apply_deployment_kit
    if kind == "tool_action":  # resumes the paused chat turn
        from colony.flows.chat.resume import apply_tool_action  # lazy: (see above)

        return apply_tool_action
    return None


def _send_and_remember(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    # lazy: (see above), both only when a message is approved
    from colony.flows.knowledge.kc_lifecycle import remember_message
    from colony.flows.outbound.sending import queue_approved

    queue_approved(deps, cur, org_id, item_id, payload)
    remember_message(deps, cur, org_id, item_id, payload)
