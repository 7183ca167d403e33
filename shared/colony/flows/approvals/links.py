"""Signed links to the assets bucket, as a card or a notice hands them to a person: a V4
signed GET URL with its expiry. The queue signs a deployment kit's link when its card is made
(``approval_queue``); AGT-009 signs one for the notice it returns (``flows.pipeline``), which
needs none of the queue's cards or edit rules."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from colony.flows.deps import FlowDeps


def signed_link(deps: FlowDeps, name: str) -> dict[str, Any]:
    """A V4 signed GET URL for object ``name`` in the assets bucket, valid from now for
    ``COLONY_SIGNED_URL_TTL_SECONDS``, with its expiry."""
    ttl = deps.settings.signed_url_ttl_seconds
    now = deps.clock()
    return {
        "url": deps.blobs.signed_url(name, ttl),
        "expires_at": (now + timedelta(seconds=ttl)).isoformat(),
        "expires_in_seconds": ttl,
    }
