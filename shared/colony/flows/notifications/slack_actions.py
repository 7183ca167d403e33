"""A click on an item's Approve or Reject button in Slack: verified as Slack's, mapped to a
person of the org, and decided through the same person-authorised path as /overview
(``colony.flows.approvals.approval.decide``, channel ``slack``, on the audit log).

    POST /slack/interactions (form: payload=<json>), X-Slack-Signature, -Request-Timestamp
        ─► v0 HMAC-SHA256 with the app's signing secret, within five minutes (else 401,
           recorded as a rejection: nothing in it can be trusted, not even its org)
        ─► the button's value names the org and the item; the request's team must be the
           org's Slack workspace (else: a user of another workspace, refused)
        ─► the Slack user must be mapped, by the person themselves, to an active member of
           that org (else refused) ─► decide(actor = that member, channel "slack")

Every refusal after the signature is a refused attempt on the org's audit log (as a refused
decision on /overview is), naming the Slack user it came from; nothing is decided by a model
or by a click that does not map to a person.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from colony.errors import CallerError, Forbidden, Unauthorized, ValidationFailed
from colony.flows.approvals import approval
from colony.flows.deps import FlowDeps
from colony.ports import RejectionRecorder
from colony.slack_signing import verify
from colony.store.notifications import org, prefs
from colony.webhooks import HeaderReader

HANDLER = "slack-interactions"
ACTIONS = {"approve": "approve", "reject": "reject"}
MAX_BODY = 64 * 1024


def act(
    deps: FlowDeps,
    rejections: RejectionRecorder,
    signing_secret: str,
    headers: HeaderReader,
    body: bytes,
) -> dict[str, Any]:
    """Decide the clicked item as the person the Slack user is; raises (and records) a
    refusal otherwise."""
    try:
        if len(body) > MAX_BODY:
            raise ValidationFailed("a Slack interaction is at most 64 KiB")
        verify(signing_secret, headers, body, deps.clock().timestamp())
        click = _click(body)
    except (Unauthorized, ValidationFailed) as error:
        rejections.record(HANDLER, None, None, f"{error.code}: {error}")
        raise
    team, slack_user, action, org_id, item_id = click
    who = f"slack:{team}:{slack_user}"
    try:
        user_id = _person(deps, org_id, team, slack_user)
    except CallerError as error:
        approval.refuse(deps, org_id, who, "slack", action, error, item_id=item_id)
        raise
    actor = approval.Actor(user_id, "slack")
    decided = approval.decide(deps, org_id, item_id, ACTIONS[action], actor=actor)  # type: ignore[arg-type]
    return {"decided": decided, "by": user_id}


def _click(body: bytes) -> tuple[str, str, str, str, str]:
    try:
        form = parse_qs(body.decode("utf-8"), strict_parsing=True)
        payload = json.loads(form["payload"][0])
        team = str(payload["team"]["id"])
        slack_user = str(payload["user"]["id"])
        (click,) = payload["actions"]
        action, value = str(click["action_id"]), str(click["value"])
    except (KeyError, ValueError, TypeError, UnicodeDecodeError):
        raise ValidationFailed("not a Slack block action with one button") from None
    if payload.get("type") != "block_actions" or action not in ACTIONS:
        raise ValidationFailed("only the Approve and Reject buttons decide")
    org_id, _, item_id = value.partition(":")
    if not org_id or not item_id or len(value) > 420:
        raise ValidationFailed("the button names no item")
    return team, slack_user, action, org_id, item_id


def _person(deps: FlowDeps, org_id: str, team: str, slack_user: str) -> str:
    """The member of ``org_id`` whose Slack user this is, in the org's own workspace."""
    with deps.db.transaction(org_id) as cur:
        settings = org.get(cur)
        if settings is None or settings["slack_team_id"] != team:
            raise Forbidden("this Slack workspace is not the organisation's")
        person = prefs.by_slack_user(cur, slack_user)
    if person is None:
        raise Forbidden(
            "your Slack user is not mapped to a person of the organisation;"
            " set your Slack member id in Colony first"
        )
    if person["status"] != "active":
        raise Forbidden("you are no longer a member of the organisation")
    return str(person["user_id"])
