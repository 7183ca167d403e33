"""Org lifecycle from Clerk: signed ``organization.*`` webhooks → the org's row and defaults.

    Clerk (via Svix) ─► receive: verify svix-id / svix-timestamp / svix-signature over the raw
        body (``standardwebhooks``, Svix's scheme, with its 5-minute timestamp tolerance),
        parse the event, skip a replayed event id (``processed_events``) ─►
        ``organization.created`` / ``.updated``: the org row (named as in Clerk) and its
        starting ICP definition, written with the event's record in one transaction;
        ``organization.deleted``: the org erasure job (``flows.tenants.erasure``), on its queue;
        ``organizationMembership.*``: the org's people (``flows.tenants.clerk_members``).

An org's time zone may come from Clerk: ``public_metadata.time_zone`` (an IANA name) on an
``organization.*`` event sets it (``flows.tenants.team``); a name that is not a time zone is
left out, the rest of the event applied, and the refusal recorded as a rejection.

A delivery that does not verify or parse is refused (401 / 400), recorded as a rejection (ids
and the reason, never the body or a header), and changes nothing. Other event types Clerk
may send to the same endpoint are acknowledged and ignored, so Svix does not retry them.

A new org's Knowledge Core starts in the shared partition, answered by exact scans (correct,
and fast at a new org's size); it moves to its own HNSW graphs by itself once it outgrows
that (``colony.knowledge.tiering``).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from colony.errors import ConfigError, NotFound, Unauthorized, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.tenants import clerk_members, team
from colony.knowledge.indexes import ORG_ID
from colony.ports import RejectionRecorder
from colony.store import processed_events
from colony.store.tenants import orgs
from colony.store.tenants import team as team_store
from colony.svix import verify_svix

HANDLER = "clerk-webhook"
EVENTS = ("organization.created", "organization.updated", "organization.deleted")
MAX_NAME = 256


class Headers(Protocol):
    """What is read of the request's headers (werkzeug's, case-insensitive, or a dict)."""

    def get(self, key: str, /) -> str | None: ...


def receive(
    deps: FlowDeps, rejections: RejectionRecorder, raw: bytes, headers: Headers
) -> dict[str, Any]:
    """Handle one Clerk webhook delivery (``raw``: the exact body bytes); a refusal goes to
    ``rejections`` before it is raised."""
    event_id = headers.get("svix-id") or None
    try:
        _verify(deps, raw, headers)
        body = _body(raw)
        kind = str(body["type"])
        if kind in clerk_members.EVENTS:
            member = clerk_members.parse(body.get("data"), body.get("timestamp"))
        else:
            org_id, name = _parse(kind, body.get("data"))
    except (Unauthorized, ValidationFailed) as error:
        rejections.record(HANDLER, _short(event_id), None, f"{error.code}: {error}")
        raise
    assert event_id is not None  # verified: the signature covers it
    key = _short(event_id) or event_id
    if kind in clerk_members.EVENTS:
        return clerk_members.apply(deps, kind, member, key)
    if kind not in EVENTS:
        return {"status": "ignored", "reason": f"{kind} is not an organization event"}
    if kind == "organization.deleted":
        return _deleted(deps, org_id, key)
    zone = _time_zone(rejections, event_id, org_id, body["data"])
    with deps.db.transaction(org_id) as cur:
        if processed_events.seen(cur, HANDLER, key):
            return {"status": "duplicate", "org_id": org_id}
        orgs.upsert(cur, org_id, name or org_id)
        icp = orgs.ensure_default_icp(cur, org_id)
        if zone is not None and team_store.zone_known(cur, zone):
            team_store.set_time_zone(cur, org_id, zone)
        processed_events.mark(cur, org_id, HANDLER, key, detail=kind)
    result = {"status": "applied", "event": kind, "org_id": org_id, "default_icp": icp}
    return result | ({"time_zone": zone} if zone else {})


def _time_zone(
    rejections: RejectionRecorder, event_id: str, org_id: str, data: dict[str, Any]
) -> str | None:
    """The zone Clerk's org metadata names, if it names a real one; a bad name is recorded
    (and the rest of the event still applied: an org is not refused for its metadata)."""
    meta = data.get("public_metadata")
    zone = meta.get("time_zone") if isinstance(meta, dict) else None
    if zone is None:
        return None
    try:
        return team.valid_zone(zone, "public_metadata.time_zone")
    except ValidationFailed as error:
        rejections.record(HANDLER, _short(event_id), org_id, f"{error.code}: {error}")
        return None


def _deleted(deps: FlowDeps, org_id: str, key: str) -> dict[str, Any]:
    """Hand the org to the erasure path. The job erases ``processed_events`` too, so the
    replay guard is the job itself: an open job is found again, an erased org is not found."""
    from colony.flows.tenants import erasure  # lazy: its task models and Drive load with a deletion

    try:
        job_id = erasure.request_org(deps, org_id, f"clerk:{key}")
    except NotFound:
        return {"status": "ignored", "reason": "the org does not exist (or is erased)"}
    erasure.schedule(deps, job_id)
    return {"status": "erasing", "org_id": org_id, "job_id": job_id}


def _verify(deps: FlowDeps, raw: bytes, headers: Headers) -> None:
    secret = deps.settings.clerk_webhook_secret
    if not secret:
        raise ConfigError("COLONY_CLERK_WEBHOOK_SECRET is required to accept Clerk events")
    try:
        verify_svix(secret, raw, headers, "Clerk")
    except ConfigError:
        raise ConfigError("COLONY_CLERK_WEBHOOK_SECRET is not a whsec_ secret") from None


def _body(raw: bytes) -> dict[str, Any]:
    """A verified body: Clerk's event is ``{"type", "object": "event", "data": {...}}``."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ValidationFailed("the body is not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise ValidationFailed("a Clerk event is a JSON object with a type")
    return body


def _parse(kind: str, data: Any) -> tuple[str, str | None]:
    """(org id, org name) of an organization event (``data``: ``{"id", "name", ...}``)."""
    if not kind.startswith("organization."):
        return "", None
    if not isinstance(data, dict):
        raise ValidationFailed("data: an organization event needs an object")
    org_id, name = data.get("id"), data.get("name")
    if not isinstance(org_id, str) or not ORG_ID.fullmatch(org_id):
        raise ValidationFailed("data.id: not a Clerk organization id")
    if kind != "organization.deleted" and (not isinstance(name, str) or not name.strip()):
        raise ValidationFailed("data.name: an organization needs a name")
    if isinstance(name, str) and len(name) > MAX_NAME:
        raise ValidationFailed(f"data.name: longer than {MAX_NAME} characters")
    return org_id, name.strip() if isinstance(name, str) else None


def _short(event_id: str | None) -> str | None:
    return event_id[:200] if event_id else None
