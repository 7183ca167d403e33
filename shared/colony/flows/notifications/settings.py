"""A person's notification settings, set by themselves (their own choices, their own Slack
identity), and the org's, set by its admins (its Slack workspace and bot token, the brief's
local time). The bot token and a person's webhook URL are secrets: they go to the secret
store and only their names are kept (``colony.store.notifications``)."""

from __future__ import annotations

import hashlib
from datetime import time
from typing import Any

from colony.contracts.notifications import BriefTime, PreferencesUpdate, SlackConnect, SlackIdentity
from colony.errors import Conflict, Forbidden, OwnedElsewhere, OwnershipUnproven
from colony.flows.deps import FlowDeps
from colony.flows.notifications.kinds import KINDS, channel_for
from colony.flows.notifications.local_time import next_at, org_time_zone
from colony.ports import SecretStore, Slack, SlackTokenRevoked
from colony.store import claims
from colony.store.approvals import audit
from colony.store.notifications import org, outbox, prefs
from colony.store.tenants import members

CLAIM_KIND = "slack_team"  # resource_claims: one org per Slack workspace


def _member(cur: Any, user_id: str) -> members.Member:
    person = members.get(cur, user_id)
    if person is None or not person.active:
        raise Forbidden(
            "only a person of the org sets notifications; you are not one of its members"
        )
    return person


def secret_name(*parts: str) -> str:
    """A secret id for an org's (or a person's) Slack credential: hashed, so any org or user
    id makes a valid name and none is spelled out in the secret store."""
    return "slack-" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def preferences(deps: FlowDeps, org_id: str, user_id: str) -> dict[str, Any]:
    """The person's channel for every kind (their choice or its default), their Slack
    identity, what could not reach them lately, and whether Slack is paused for the org."""
    with deps.db.transaction(org_id) as cur:
        person = _member(cur, user_id)
        chosen = prefs.of_person(cur, user_id)
        slack = prefs.slack_of(cur, user_id)
        settings = org.get(cur)
        failed = outbox.notices(cur, user_id)
    return {
        "channels": {kind: channel_for(kind, person.role, chosen) for kind in KINDS},
        "chosen": chosen,
        "email": person.email,
        "slack_user_id": slack["slack_user_id"] if slack else None,
        "slack_webhook": bool(slack and slack["webhook_secret"]),
        "slack": _slack_state(settings),
        "brief_at": settings["brief_at"].strftime("%H:%M") if settings else "08:00",
        "notices": [
            {
                "id": n["id"],
                "channel": n["channel"],
                "kind": n["kind"],
                "status": n["status"],
                "error": n["error"],
                "attempts": n["attempts"],
            }
            for n in failed
        ],
    }


def _slack_state(settings: Any) -> dict[str, Any]:
    if settings is None or not settings["slack_token_secret"]:
        return {"connected": False, "paused": False, "reason": None}
    paused = settings["slack_paused_at"] is not None
    return {
        "connected": True,
        "team_id": settings["slack_team_id"],
        "paused": paused,
        "reason": settings["slack_pause_reason"] if paused else None,
    }


def set_preferences(
    deps: FlowDeps, org_id: str, user_id: str, body: PreferencesUpdate
) -> dict[str, Any]:
    """Set the person's own choices (validated by the contract: known kinds and channels)."""
    with deps.db.transaction(org_id) as cur:
        _member(cur, user_id)
        for kind, channel in body.channels.items():
            prefs.set_channel(cur, org_id, user_id, kind, channel)
        if body.channels.get("brief", "off") != "off":
            _schedule_brief(deps, cur, org_id)
    return preferences(deps, org_id, user_id)


def _schedule_brief(deps: FlowDeps, cur: Any, org_id: str, *, again: bool = False) -> None:
    """Put the brief's next delivery on the org's calendar (or again, its time changed)."""
    settings = org.ensure(cur, org_id)
    if settings["brief_next_at"] is None or again:
        when = next_at(deps.clock(), settings["brief_at"], org_time_zone(cur))
        org.set_brief(cur, settings["brief_at"], when)


def set_slack_identity(
    deps: FlowDeps, secrets: SecretStore, org_id: str, user_id: str, body: SlackIdentity
) -> dict[str, Any]:
    """Set (or clear) who the person is in Slack; a member id someone else in the org set
    already is a conflict (one person per Slack user, or a click would decide for two)."""
    hook = None
    if body.webhook_url is not None:
        hook = secret_name("hook", org_id, user_id)
        secrets.put(hook, body.webhook_url)
    with deps.db.transaction(org_id) as cur:
        _member(cur, user_id)
        if body.slack_user_id is not None:
            holder = prefs.slack_holder(cur, body.slack_user_id)
            if holder is not None and holder != user_id:
                raise Conflict("another person of the org set that Slack member id as theirs")
        prefs.set_slack(cur, org_id, user_id, body.slack_user_id, hook)
    return preferences(deps, org_id, user_id)


def connect_slack(
    deps: FlowDeps,
    secrets: SecretStore,
    slack: Slack,
    org_id: str,
    body: SlackConnect,
    actor: str,
) -> dict[str, Any]:
    """Connect the org's Slack (an admin's act, checked by the admin edge): the token must
    be of the workspace named (Slack's ``auth.test``) and the workspace no other org's (one
    org per workspace: a click is trusted for the org whose workspace it comes from). Then
    the token goes to the secret store, Slack is un-paused and what it held goes again. A
    refusal is on the org's audit log."""
    try:
        team = slack.team_of(body.bot_token)
    except SlackTokenRevoked:
        team = None
    if team != body.team_id:
        why = f"the bot token is not one of Slack workspace {body.team_id}"
        _refused(deps, org_id, actor, body.team_id, why)
        raise OwnershipUnproven(why)
    with deps.db.transaction(org_id) as cur:
        won = claims.claim(cur, org_id, CLAIM_KIND, body.team_id, "auth.test", actor)
    if won is claims.Claim.ELSEWHERE:
        why = f"Slack workspace {body.team_id} is connected to another organisation"
        _refused(deps, org_id, actor, body.team_id, why)
        raise OwnedElsewhere(why)
    name = secret_name("bot", org_id)
    secrets.put(name, body.bot_token)
    with deps.db.transaction(org_id) as cur:
        org.ensure(cur, org_id)
        org.set_slack(cur, body.team_id, name)
        outbox.release_slack(cur, deps.clock())
        return _slack_state(org.get(cur))


def _refused(deps: FlowDeps, org_id: str, actor: str, team: str, why: str) -> None:
    entry = audit.Entry(
        "refusal", actor, "admin", "slack.connect", reason=why, detail={"team_id": team}
    )
    with deps.db.transaction(org_id) as cur:
        audit.append(cur, org_id, entry)


def set_brief_time(deps: FlowDeps, org_id: str, body: BriefTime) -> dict[str, Any]:
    """The org's brief goes out at ``brief_at`` local time from the next time it comes."""
    at = time.fromisoformat(body.brief_at)
    with deps.db.transaction(org_id) as cur:
        org.ensure(cur, org_id)
        org.set_brief(cur, at, None)
        _schedule_brief(deps, cur, org_id, again=True)
        settings = org.get(cur)
    assert settings is not None
    return {"brief_at": body.brief_at, "next_at": settings["brief_next_at"].isoformat()}
