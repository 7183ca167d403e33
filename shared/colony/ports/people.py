"""An org's people as its identity provider lists them (issue 35 item 1): Clerk's Backend
API, read when an org that existed before the membership webhook is resynced.

``colony.adapters.clerk_backend`` reads it over HTTPS with the instance's secret key; the
local stand-in (``colony.testing.clerk_server``) answers the same routes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ClerkDirectory(Protocol):
    """Every membership of one organization, page after page, each as Clerk's
    ``OrganizationMembership`` object (``organization``, ``public_user_data``, ``role``,
    ``created_at``, ``updated_at``). ``UpstreamError`` when Clerk cannot answer now;
    ``NotFound`` when Clerk has no such organization."""

    def memberships(self, org_id: str) -> Iterator[dict[str, Any]]: ...
