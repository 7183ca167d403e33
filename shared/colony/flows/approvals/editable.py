"""What of an approval item a person may replace, by kind, and what deciding it means to
them: the data the cards show (``approval_cards``: "editable", "labels") and
``approval_kinds`` enforces with the check each kind's edit passes. Kept apart from those
checks and the contracts they validate against, so the queue a person reads loads none of
them (issue 32 item 4)."""

from __future__ import annotations

EDITABLE: dict[str, frozenset[str]] = {
    "outbound_message": frozenset({"subject", "body"}),
    "follow_up": frozenset({"subject", "body"}),
    "kc_update_candidate": frozenset({"content"}),
    "deal_update": frozenset({"changes"}),
    "content_piece": frozenset({"title", "body"}),
    # The kit's document is in GCS, written by AGT-009: reject it and ask for another.
    "deployment_kit": frozenset(),
    # Only the arguments the held tool declares editable (HELD_TOOLS).
    "tool_action": frozenset({"arguments"}),
    # CONST-004: an agent said what it lacked for a contact; nothing was drafted, so there is
    # nothing to edit or approve: a person reads which fields are missing and dismisses it.
    "missing_data": frozenset(),
    # A LinkedIn or call step of a sequence: a task for a person, with the talking points
    # AGT-005 drafted. Nothing is sent for it; the person does it (approve: done) or chooses
    # not to (reject: skipped), and either moves the sequence on (flows.outbound.sequences).
    "sequence_task": frozenset(),
    # HubSpot changed a deal field since the card that changed it read it (issue 36): a
    # person keeps ours (written again) or HubSpot's (our deal takes it); nothing else.
    "crm_conflict": frozenset({"keep"}),
}

APPROVE_REJECT = ("Approve", "Reject")
# What approving and rejecting an item of a kind mean to the person deciding it (the labels
# of its card's buttons), where not APPROVE_REJECT: a task for a person is done or skipped.
LABELS: dict[str, tuple[str, str]] = {
    "sequence_task": ("Done", "Skip"),
    "crm_conflict": ("Keep the chosen values", "Leave both as they are"),
}
