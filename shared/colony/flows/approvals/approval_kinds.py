"""What each kind of approval item allows: which fields a person may edit, how an edited
payload is validated, and what applying it does (its name on the audit log).

An edit replaces only the fields its kind declares editable: never a tool's name, a deal's
id, a recipient, a run or a session (issue 14: a ``launch_campaign`` card was once applied as
another tool because an edit could merge any field). The edited payload is then validated
against the kind's schema, the same one its applier parses, so a person cannot approve into
existence a payload no agent could have proposed. A message's edit is checked against the
whole of CONST-006 (``Policy``: the org's competitor list and, for an outbound message, the
contact's signals), the same rules its drafting call had to pass. A held chat tool's edit
(``tool_action``) is checked against ``HELD_TOOLS``: the chat's tools read which of them are
held from there, so the rules sit here, below the chat, and need nothing from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from colony.contracts import (
    ContentPiece,
    FollowUpDraft,
    KcUpdateCandidate,
    OutboundMessage,
)
from colony.contracts.chat import LaunchCampaignArgs, ResearchCompanyArgs
from colony.contracts.deals import parse_update
from colony.errors import ValidationFailed, describe_validation
from colony.flows.approvals.editable import APPROVE_REJECT, EDITABLE, LABELS
from colony.policy.outbound import check_outbound, check_shape

Payload = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Policy:
    """What an edit is checked against besides its schema: the org's competitors (CONST-006)
    and the contact's signals (an outbound message must reference exactly one)."""

    competitors: Sequence[str] = ()
    contact_signals: Sequence[str] = field(default_factory=tuple)


# (before, after, policy) → None, or ValidationFailed
Check = Callable[[Payload, Payload, Policy], None]


class InvalidToolArguments(ValidationFailed):
    """A tool's arguments that do not validate: in the model's call of a tool
    (``colony.flows.chat.tools.parse_args``) or in a person's edit of a held one."""

    code = "invalid_tool_arguments"


@dataclass(frozen=True, slots=True)
class HeldTool:
    """A chat tool held for a person's approval: its arguments' model and the arguments a
    person may change on the held action's card; never what it acts on."""

    args: type[BaseModel]
    editable: tuple[str, ...] = ()


# The chat's gated tools, by name (``colony.flows.chat.tools.Tool.gated`` reads it).
HELD_TOOLS: dict[str, HeldTool] = {
    "launch_campaign": HeldTool(LaunchCampaignArgs, ("name", "angle", "tier")),
    # a person may point it at another company, never make it read a fresh site again
    "research_company": HeldTool(ResearchCompanyArgs, ("domain",)),
}


def tool_arguments(tool_name: str, args: type[BaseModel], arguments: Payload) -> BaseModel:
    """``arguments`` validated against ``args``; errors name fields, never echo values."""
    try:
        return args.model_validate(dict(arguments))
    except ValidationError as error:
        raise InvalidToolArguments(
            f"invalid arguments for {tool_name}: {describe_validation(error)}"
        ) from None


@dataclass(frozen=True, slots=True)
class ItemKind:
    """What an item of one kind allows: its effect's name, its editable fields, the check an
    edit passes, and whether it can be approved at all."""

    effect: str  # what applying an item of this kind did, as the audit log names it
    editable: frozenset[str]  # top-level payload fields a person may replace
    check: Check | None = None  # validates an edited payload
    approvable: bool = True  # False: a notice a person can only dismiss (reject)
    # What approving and rejecting an item of this kind mean to the person deciding it (the
    # labels of its card's buttons): a task for a person is done or skipped, not approved.
    labels: tuple[str, str] = APPROVE_REJECT


def _model(model: type[BaseModel], fields: tuple[str, ...], payload: Payload) -> None:
    try:
        model.model_validate({k: payload.get(k) for k in fields})
    except ValidationError as error:
        problem = describe_validation(error)
        raise ValidationFailed(f"the edited item is invalid: {problem}") from None


def _breaks(problems: Sequence[str]) -> None:
    if problems:
        raise ValidationFailed("the edited message breaks CONST-006: " + "; ".join(problems))


def _message(before: Payload, after: Payload, policy: Policy) -> None:
    fields = ("subject", "body", "angle_used", "signal_referenced")
    _model(OutboundMessage, fields, after)
    message = OutboundMessage.model_validate({k: after.get(k) for k in fields})
    tier = str(after.get("tier") or "T3")
    _breaks(
        check_outbound(
            message,
            tier=tier,
            contact_signals=list(policy.contact_signals),
            competitors=list(policy.competitors),
        )
    )


def _follow_up(before: Payload, after: Payload, policy: Policy) -> None:
    _model(FollowUpDraft, ("subject", "body"), after)
    tier = str(after.get("tier") or "T3")
    subject, body = str(after["subject"]), str(after["body"])
    _breaks(check_shape(subject, body, tier=tier, competitors=list(policy.competitors)))


def _kc(before: Payload, after: Payload, policy: Policy) -> None:
    _model(KcUpdateCandidate, ("domain", "content", "confidence"), after)


def _deal(before: Payload, after: Payload, policy: Policy) -> None:
    parse_update(after)


def _crm_conflict(before: Payload, after: Payload, policy: Policy) -> None:
    if after.get("keep") not in ("ours", "theirs"):
        raise ValidationFailed("keep must be 'ours' or 'theirs'")


def _content(before: Payload, after: Payload, policy: Policy) -> None:
    _model(ContentPiece, ("title", "format", "body"), after)


def _tool_action(before: Payload, after: Payload, policy: Policy) -> None:
    """Valid when only the held tool's editable arguments changed and they still validate."""
    arguments = after.get("arguments")
    if not isinstance(arguments, Mapping):
        raise InvalidToolArguments("the edited arguments must be an object")
    name = str(before.get("tool"))
    tool = HELD_TOOLS.get(name)
    if tool is None:
        raise ValidationFailed("only a held tool action's arguments can be edited")
    old = before.get("arguments") or {}
    changed = {k for k in {*old, *arguments} if old.get(k) != arguments.get(k)}
    refused = sorted(changed - set(tool.editable))
    if refused:
        raise ValidationFailed(
            f"{', '.join(refused)} of {name} cannot be edited; "
            f"editable: {', '.join(tool.editable) or 'none'}"
        )
    tool_arguments(name, tool.args, arguments)


# (effect, the check an edit passes, approvable); what may be edited, and the buttons'
# labels, are ``colony.flows.approvals.editable``'s
_KINDS: dict[str, tuple[str, Check | None, bool]] = {
    "outbound_message": ("message_queued", _message, True),
    "follow_up": ("message_queued", _follow_up, True),
    "kc_update_candidate": ("kc_upserted", _kc, True),
    "deal_update": ("deal_changed", _deal, True),
    "content_piece": ("content_published", _content, True),
    "deployment_kit": ("kit_released", None, True),
    "tool_action": ("tool_run", _tool_action, True),
    "missing_data": ("dismissed", None, False),  # CONST-004: dismissed, never approved
    "sequence_task": ("task_done", None, True),  # a person's task: done (approve) or skipped
    "crm_conflict": ("crm_conflict_resolved", _crm_conflict, True),  # ours or HubSpot's
}
KINDS: dict[str, ItemKind] = {
    kind: ItemKind(effect, EDITABLE[kind], check, approvable, LABELS.get(kind, APPROVE_REJECT))
    for kind, (effect, check, approvable) in _KINDS.items()
}


def item_kind(kind: str) -> ItemKind:
    spec = KINDS.get(kind)
    if spec is None:
        raise ValidationFailed(f"approval items of kind {kind!r} cannot be decided here")
    return spec


def edit(
    kind: str, payload: Payload, edited: Payload, policy: Policy | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The edited payload and its diff (``{field: {"from": old, "to": new}}``), or
    ValidationFailed naming the fields that may not be edited or the first invalid one.
    ``policy`` carries the org's competitors and the contact's signals for a message's
    CONST-006 check (none given: an empty list of each)."""
    spec = item_kind(kind)
    if not spec.editable:
        raise ValidationFailed(f"a {kind} cannot be edited; reject it instead")
    refused = sorted(set(edited) - spec.editable)
    if refused:
        raise ValidationFailed(
            f"{', '.join(refused)} of a {kind} cannot be edited; "
            f"editable: {', '.join(sorted(spec.editable))}"
        )
    after = {**payload, **edited}
    if spec.check is not None:
        spec.check(payload, after, policy or Policy())
    diff = {
        field: {"from": payload.get(field), "to": value}
        for field, value in edited.items()
        if payload.get(field) != value
    }
    if not diff:
        raise ValidationFailed("the edit changes nothing; approve the item instead")
    return after, diff
