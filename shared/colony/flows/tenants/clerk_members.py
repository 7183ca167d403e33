"""An org's people from Clerk: ``organizationMembership.*`` webhooks, and a resync from
Clerk's Backend API for orgs that existed before the webhook did.

    organizationMembership.created / .updated ─► the person joins (or their role, address or
        name changes): ``org_members``, active
    organizationMembership.deleted ─► the person is gone: ``org_members`` 'left', and what
        they owned or had waiting handed to the org's backup (``flows.tenants.owners``)
    resync(org) ─► Clerk's list of the org's memberships (``ClerkDirectory``, every page):
        each listed person joins; each active person Clerk no longer lists leaves

A membership event carries its organization (``data.organization``: id and name), so one that
arrives before ``organization.created`` (Svix does not order deliveries) still finds the
org: it is upserted as ``organization.created`` would. Clerk's own times decide the order
(``data.updated_at``; a deletion's event ``timestamp``): an event older than the last applied
changes nothing. Checked by ``clerk_orgs.receive`` (signature, replay) before it reaches here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from colony.errors import ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.tenants import owners
from colony.knowledge.indexes import ORG_ID
from colony.ports import ClerkDirectory
from colony.store import processed_events
from colony.store.tenants import members, orgs

EVENTS = (
    "organizationMembership.created",
    "organizationMembership.updated",
    "organizationMembership.deleted",
)
HANDLER = "clerk-webhook"
MAX_TEXT = 256


@dataclass(frozen=True, slots=True)
class Membership:
    """One membership as Clerk describes it (an event's ``data``, or a Backend API row)."""

    org_id: str
    org_name: str | None
    user_id: str
    role: str
    email: str | None
    name: str
    at: datetime  # Clerk's time of this state


def parse(data: Any, event_at: Any = None) -> Membership:
    """A membership object (``{"organization": {...}, "public_user_data": {...}, "role",
    "updated_at"}``); ``event_at``: the event's ``timestamp`` (ms), preferred when later."""
    if not isinstance(data, dict):
        raise ValidationFailed("data: a membership event needs an object")
    org, user = data.get("organization"), data.get("public_user_data")
    if not isinstance(org, dict) or not isinstance(org.get("id"), str):
        raise ValidationFailed("data.organization.id: a membership names its organization")
    if not ORG_ID.fullmatch(org["id"]):
        raise ValidationFailed("data.organization.id: not a Clerk organization id")
    if not isinstance(user, dict) or not _text(user.get("user_id"), 128):
        raise ValidationFailed("data.public_user_data.user_id: a membership names its user")
    role = data.get("role")
    if not isinstance(role, str) or not _text(role, 64):
        raise ValidationFailed("data.role: a membership has a role")
    identifier = user.get("identifier")
    email = identifier if isinstance(identifier, str) and "@" in identifier else None
    if email is not None and not 3 <= len(email) <= 320:
        raise ValidationFailed("data.public_user_data.identifier: not an address we can keep")
    parts = [user.get("first_name"), user.get("last_name")]
    name = " ".join(p.strip() for p in parts if isinstance(p, str) and p.strip())[:MAX_TEXT]
    org_name = org.get("name") if isinstance(org.get("name"), str) else None
    candidates = (data.get("updated_at"), data.get("created_at"), event_at)
    stamps = [t for t in candidates if isinstance(t, int) and _ms(t)]
    if not stamps:
        raise ValidationFailed("data.updated_at: a membership has Clerk's time")
    at = datetime.fromtimestamp(max(stamps) / 1000, tz=UTC)
    return Membership(org["id"], org_name, user["user_id"], role, email, name, at)


def _text(value: Any, most: int) -> bool:
    return isinstance(value, str) and 0 < len(value) <= most


def _ms(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def apply(deps: FlowDeps, kind: str, member: Membership, key: str) -> dict[str, Any]:
    """One verified membership event, once per Svix message id (``key``)."""
    org = member.org_id
    with deps.db.transaction(org) as cur:
        if processed_events.seen(cur, HANDLER, key):
            return {"status": "duplicate", "org_id": org}
        _org(cur, member)
        applied, handed = _apply(cur, kind, member, f"clerk:{key}")
        processed_events.mark(cur, org, HANDLER, key, detail=kind)
    result: dict[str, Any] = {"status": "applied" if applied else "stale", "event": kind}
    result |= {"org_id": org, "user_id": member.user_id}
    return result | ({"handed_over": handed} if handed else {})


def _org(cur: Any, member: Membership) -> None:
    if orgs.get(cur, member.org_id) is None:
        orgs.upsert(cur, member.org_id, (member.org_name or member.org_id)[:MAX_TEXT])
        orgs.ensure_default_icp(cur, member.org_id)


def _apply(cur: Any, kind: str, m: Membership, actor: str) -> tuple[bool, dict[str, Any] | None]:
    if kind == "organizationMembership.deleted":
        applied = members.clerk_leave(cur, m.org_id, m.user_id, m.role, m.email, m.name, m.at)
    else:
        applied = members.clerk_join(cur, m.org_id, m.user_id, m.role, m.email, m.name, m.at)
    person = members.get(cur, m.user_id)
    handed = None
    if person is not None and not person.active:  # whatever they still hold goes on
        handed = owners.hand_over(cur, m.org_id, m.user_id, actor)
    return applied, handed


def resync(deps: FlowDeps, directory: ClerkDirectory, org_id: str, actor: str) -> dict[str, Any]:
    """The org's people as Clerk lists them now: joins, changes and leavers (handed over)."""
    listed = [parse(row) for row in directory.memberships(org_id)]
    if any(m.org_id != org_id for m in listed):
        raise ValidationFailed("Clerk listed a membership of another organization")
    now = deps.clock().astimezone(UTC)
    joined = left = 0
    with deps.db.transaction(org_id) as cur:
        if orgs.get(cur, org_id) is None:
            raise ValidationFailed(f"organization {org_id!r} has no record; nothing to resync")
        for m in listed:
            joined += members.clerk_join(cur, org_id, m.user_id, m.role, m.email, m.name, m.at)
        seen = {m.user_id for m in listed}
        for person in members.active(cur):
            if person.user_id in seen:
                continue
            role, email, name = person.role, person.email, person.name
            if members.clerk_leave(cur, org_id, person.user_id, role, email, name, now):
                left += 1
                owners.hand_over(cur, org_id, person.user_id, actor)
    return {"org_id": org_id, "listed": len(listed), "joined_or_changed": joined, "left": left}
