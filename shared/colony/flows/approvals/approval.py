"""Flow 5, the approval callback (CONST-001; SPEC §6.5): people decide, and it is recorded.

``decide`` approves, rejects or edits one approval item on behalf of an ``Actor``: a person
(a verified user id) acting through a channel — their card in the UI, a signed link that was
sent to them, or a card confirming a decision the chat proposed. No model output reaches
here as an actor: the edges build one only from a verified bearer token, and no chat tool
decides anything (``colony.flows.chat.tools``). A decision's applier (what approving an item
of its kind does, owned by the capability that made the item and found through
``FlowDeps.applier``: ``colony.runtime.appliers``) runs with a guard set, so
nothing it calls (a resumed chat turn, say) can decide another item.

Every decision is appended to the audit log (``store.approvals.audit``) with the actor, channel,
reason and, for edits, the diff; every side effect applying it caused follows it, in the same
transaction. Every refused attempt by a known person is recorded too, in its own transaction.

Applying is idempotent: the outbox row is unique per approval item, and deciding an
already-decided item the same way again returns its state unchanged; deciding it differently
is a conflict (``AlreadyDecided``: its answer says who decided, how and when).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from colony.errors import (
    AlreadyDecided,
    CallerError,
    Conflict,
    Forbidden,
    NotFound,
    ValidationFailed,
)
from colony.flows.approvals.approval_kinds import Policy, edit, item_kind
from colony.flows.deps import FlowDeps
from colony.flows.outbound import sequences
from colony.flows.tenants import org_admin
from colony.store.approvals import approvals, audit
from colony.store.campaigns import campaigns, signals

Action = Literal["approve", "reject", "edit"]
# "sequence": a later step of a sequence, approved by the person whose approval of step 1
# covers the sequence (an org setting; only ``colony.flows.campaigns.message_generator`` uses it).
# "slack": a person's click on an item's Slack message, verified as Slack's and mapped to the
# member who set that Slack user as theirs (``colony.flows.notifications.slack_actions``).
Channel = Literal["ui", "link", "chat-confirmed", "sequence", "slack"]

logger = logging.getLogger("colony.flows")

FINAL = {"approve": "applied", "edit": "applied", "reject": "rejected"}
MAX_REASON = 500

# Set while a decision's applier runs: what it calls cannot decide another item.
_applying: contextvars.ContextVar[str | None] = contextvars.ContextVar("applying", default=None)


@dataclass(frozen=True, slots=True)
class Actor:
    """Who decides, and how. ``user_id`` is a verified person; ``link_nonce`` is the nonce of
    the approval link they used (channel ``link``), which one decision spends."""

    user_id: str
    channel: Channel
    link_nonce: str | None = None

    def __post_init__(self) -> None:
        if not self.user_id:
            raise Forbidden("a decision needs a person")
        if (self.channel == "link") != (self.link_nonce is not None):
            raise ValidationFailed("a link decision, and only one, carries the link's nonce")


def decide(
    deps: FlowDeps,
    org_id: str,
    item_id: str,
    action: Action,
    *,
    actor: Actor,
    edited: Mapping[str, Any] | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    if _applying.get() is not None:
        raise Forbidden(
            f"applying item {_applying.get()!r} cannot decide another item; a person must"
        )
    try:
        return _decide(deps, org_id, item_id, action, actor, edited, reason)
    except CallerError as error:
        refuse(deps, org_id, actor.user_id, actor.channel, action, error, item_id=item_id)
        raise


def refuse(
    deps: FlowDeps,
    org_id: str,
    user_id: str,
    channel: Channel,
    action: str,
    error: CallerError,
    *,
    item_id: str | None = None,
) -> None:
    """Put a person's refused attempt to decide on the org's audit log, in a transaction of
    its own (the attempt itself changed nothing)."""
    refusal = audit.Entry(
        "refusal",
        user_id,
        channel,
        str(action)[:40],
        approval_item_id=item_id,
        reason=str(error)[:MAX_REASON],
        detail={"code": error.code},
    )
    try:
        with deps.db.transaction(org_id) as cur:
            audit.append(cur, org_id, refusal)
    except Exception:  # the refusal's record is best effort: the caller's error is the answer
        logger.warning("could not record a refused decision", extra={"org_id": org_id})


def _decide(
    deps: FlowDeps,
    org_id: str,
    item_id: str,
    action: Action,
    actor: Actor,
    edited: Mapping[str, Any] | None,
    reason: str | None,
) -> dict[str, Any]:
    if action not in FINAL:
        raise ValidationFailed(f"unknown action {action!r}; expected approve, reject or edit")
    if action == "edit" and not edited:
        raise ValidationFailed("an edit needs the edited fields")
    if action != "edit" and edited:
        raise ValidationFailed("edited fields are only accepted with action 'edit'")
    if reason is not None and len(reason) > MAX_REASON:
        raise ValidationFailed(f"a reason is at most {MAX_REASON} characters")
    # An edited message is held to the whole of CONST-006, with the org's competitors.
    competitors = (
        org_admin.competitors(deps, org_id, org_admin.DEFAULT_COMPETITORS)
        if action == "edit"
        else []
    )
    with deps.db.transaction(org_id) as cur:
        item = approvals.lock(cur, item_id)
        if item is None:
            raise NotFound(f"approval item {item_id!r} does not exist in this org")
        if actor.link_nonce is not None and audit.link_used(cur, actor.link_nonce):
            raise Conflict("this approval link was already used; ask for a new one")
        kind = str(item["kind"])
        spec = item_kind(kind)
        if not spec.approvable and action != "reject":
            raise ValidationFailed(
                f"a {kind} item can only be dismissed (rejected): it has nothing to approve"
            )
        if item["status"] in ("applied", "rejected"):
            if item["status"] == FINAL[action] and action != "edit":
                return {"id": item_id, "status": item["status"], "changed": False}
            status = str(item["status"])
            raise AlreadyDecided(item_id, status, item["decided_by"], item["decided_at"])
        payload = dict(item["payload"])
        diff: dict[str, Any] = {}
        if action == "edit":
            policy = Policy(competitors, _contact_signals(cur, kind, item["subject_id"]))
            payload, diff = edit(kind, payload, edited or {}, policy)
        status = FINAL[action]
        approvals.decide(cur, item_id, status, actor.user_id, payload if action == "edit" else None)
        entry = audit.Entry(
            "decision",
            actor.user_id,
            actor.channel,
            action,
            approval_item_id=item_id,
            item_kind=kind,
            reason=reason,
            detail=_detail(diff, item),
            link_nonce=actor.link_nonce,
        )
        audit.append(cur, org_id, entry)
        if status == "applied":
            with _guard(item_id):
                _apply(deps, cur, org_id, item_id, kind, payload)
            applied = {"subject_id": item["subject_id"], "run_id": item["run_id"]}
            audit.append(cur, org_id, _effect(actor, spec.effect, item_id, kind, applied))
        if kind in sequences.STEP_KINDS:  # a sequence's step: see sequences.decided
            moved = sequences.decided(deps, cur, org_id, kind, payload, status, actor.user_id)
            if moved is not None:  # a task done or skipped moved the sequence on
                action_name = str(moved.pop("action"))
                audit.append(cur, org_id, _effect(actor, action_name, item_id, kind, moved))
    return {"id": item_id, "status": status, "changed": True}


def _effect(
    actor: Actor, action: str, item_id: str, kind: str, detail: Mapping[str, Any]
) -> audit.Entry:
    return audit.Entry(
        "effect",
        actor.user_id,
        actor.channel,
        action,
        approval_item_id=item_id,
        item_kind=kind,
        detail=dict(detail),
    )


def _contact_signals(cur: Any, kind: str, contact_id: Any) -> list[str]:
    """The signals an edited outbound message must reference one of (its contact's, now: the
    ones its drafting call was given, ``store.campaigns.signals.known_for``)."""
    if kind != "outbound_message" or not contact_id:
        return []
    contact = campaigns.contact(cur, str(contact_id))
    return signals.details(signals.known_for(cur, contact)) if contact else []


@contextmanager
def _guard(item_id: str) -> Iterator[None]:
    token = _applying.set(item_id)
    try:
        yield
    finally:
        _applying.reset(token)


def _apply(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, kind: str, payload: Mapping[str, Any]
) -> None:
    apply = deps.applier(kind)
    if apply is not None:
        apply(deps, cur, org_id, item_id, payload)


def _detail(diff: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the decision's audit entry keeps beside it: the edit's diff, and whose queue the
    item was in (issue 35: anyone with the role may take it; the record says whose it was)."""
    detail: dict[str, Any] = {"diff": dict(diff)} if diff else {}
    if item.get("assignee") or item.get("assignee_role"):
        detail["queue"] = {"assignee": item.get("assignee"), "role": item.get("assignee_role")}
    return detail or None
