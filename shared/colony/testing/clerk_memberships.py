"""Clerk's organizations and their memberships, as the stand-in keeps them: what a person
joining, changing role or leaving looks like in Clerk's ``organizationMembership.*`` webhook
events (signed by Svix) and in its Backend API's membership list.

Shapes as Clerk sends them (clerk.com/docs, "Organization Membership" webhook events and the
Backend API's ``OrganizationMembership``): the event is ``{"type", "object": "event",
"data", "timestamp", "instance_id"}``; ``data`` is the membership: ``id`` (``orgmem_…``),
``object``, ``role`` (``org:admin`` / ``org:member``), ``permissions``,
``organization`` (the org object: ``id``, ``name``, ``slug``, …), ``public_user_data``
(``user_id``, ``identifier`` (the primary address), ``first_name``, ``last_name``, …),
``public_metadata``, ``private_metadata``, ``created_at`` and ``updated_at`` in
milliseconds. A deletion's ``data`` is the membership as it was.

Svix signs each delivery: ``svix-id``, ``svix-timestamp`` and ``svix-signature`` =
``v1,`` base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")), the key being the base64 after
``whsec_`` (docs.svix.com, "Verifying Webhooks Manually").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

INSTANCE = "ins_colony_stand_in"


@dataclass
class ClerkOrg:
    id: str
    name: str
    slug: str
    public_metadata: dict[str, Any] = field(default_factory=dict)
    created_at: int = 0

    def as_object(self) -> dict[str, Any]:
        return {
            "object": "organization",
            "id": self.id,
            "name": self.name,
            "slug": self.slug,
            "image_url": "https://img.clerk.com/stand-in",
            "has_image": False,
            "members_count": None,
            "max_allowed_memberships": 5,
            "admin_delete_enabled": True,
            "public_metadata": dict(self.public_metadata),
            "created_by": "",
            "created_at": self.created_at,
            "updated_at": self.created_at,
        }


class ClerkOrgs:
    """The orgs and memberships of one Clerk instance; each change returns its event."""

    def __init__(self) -> None:
        self.orgs: dict[str, ClerkOrg] = {}
        self.memberships: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._clock = 0

    def _now(self) -> int:
        """Milliseconds, strictly increasing: two changes never share Clerk's time."""
        with self._lock:
            self._clock = max(self._clock + 1, int(time.time() * 1000))
            return self._clock

    def org(self, org_id: str, name: str, **public_metadata: Any) -> dict[str, Any]:
        """Create (or rename) an org: its ``organization.created`` event."""
        kind = "organization.updated" if org_id in self.orgs else "organization.created"
        at = self._now()
        slug = name.lower().replace(" ", "-")
        self.orgs[org_id] = ClerkOrg(org_id, name, slug, dict(public_metadata), at)
        return self._event(kind, self.orgs[org_id].as_object(), at)

    def join(
        self,
        org_id: str,
        user_id: str,
        role: str = "org:member",
        *,
        email: str | None = None,
        first_name: str | None = None,
        last_name: str | None = None,
    ) -> dict[str, Any]:
        """A person added to the org (``organizationMembership.created``)."""
        at = self._now()
        data = {
            "object": "organization_membership",
            "id": "orgmem_" + secrets.token_hex(12),
            "role": role,
            "role_name": "Admin" if role == "org:admin" else "Member",
            "permissions": _permissions(role),
            "public_metadata": {},
            "private_metadata": {},
            "organization": self.orgs[org_id].as_object(),
            "public_user_data": {
                "user_id": user_id,
                "identifier": email or f"{user_id}@example.com",
                "first_name": first_name,
                "last_name": last_name,
                "image_url": "https://img.clerk.com/stand-in",
                "has_image": False,
                "profile_image_url": "https://img.clerk.com/stand-in",
            },
            "created_at": at,
            "updated_at": at,
        }
        self.memberships[(org_id, user_id)] = data
        return self._event("organizationMembership.created", data, at)

    def change_role(self, org_id: str, user_id: str, role: str) -> dict[str, Any]:
        """A person's role changed (``organizationMembership.updated``)."""
        at = self._now()
        data = self.memberships[(org_id, user_id)]
        data.update(role=role, permissions=_permissions(role), updated_at=at)
        return self._event("organizationMembership.updated", dict(data), at)

    def leave(self, org_id: str, user_id: str) -> dict[str, Any]:
        """A person removed from the org (``organizationMembership.deleted``)."""
        at = self._now()
        data = self.memberships.pop((org_id, user_id))
        return self._event("organizationMembership.deleted", dict(data), at)

    def listed(self, org_id: str) -> list[dict[str, Any]]:
        """The org's memberships as the Backend API lists them (newest first, as Clerk's
        default ``-created_at``)."""
        rows = [m for (org, _), m in self.memberships.items() if org == org_id]
        return sorted(rows, key=lambda m: (-m["created_at"], m["id"]))

    def _event(self, kind: str, data: dict[str, Any], at: int) -> dict[str, Any]:
        return {
            "type": kind,
            "object": "event",
            "data": json.loads(json.dumps(data)),  # a snapshot: later changes do not reach it
            "timestamp": at,
            "instance_id": INSTANCE,
        }


def _permissions(role: str) -> list[str]:
    base = ["org:sys_memberships:read", "org:sys_profile:read"]
    if role == "org:admin":
        base += ["org:sys_memberships:manage", "org:sys_profile:manage", "org:sys_domains:manage"]
    return base


def deliver(url: str, event: dict[str, Any], secret: str, msg_id: str | None = None) -> Any:
    """POST the event to a webhook endpoint over HTTP, signed, as Svix delivers it; the
    ``httpx.Response``."""
    import httpx  # lazy: only the tests that deliver over HTTP need a client

    body, headers = signed(event, secret, msg_id)
    with httpx.Client(timeout=30) as http:
        return http.post(url, content=body, headers=headers)


def signed(event: dict[str, Any], secret: str, msg_id: str | None = None) -> tuple[bytes, dict]:
    """The event's body and the Svix headers Clerk's delivery carries, signed with the
    endpoint's ``whsec_`` secret."""
    body = json.dumps(event, separators=(",", ":")).encode()
    msg = msg_id or "msg_" + secrets.token_hex(12)
    stamp = str(int(time.time()))
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg}.{stamp}.".encode() + body, hashlib.sha256).digest()
    headers = {
        "svix-id": msg,
        "svix-timestamp": stamp,
        "svix-signature": "v1," + base64.b64encode(mac).decode(),
        "content-type": "application/json",
    }
    return body, headers
