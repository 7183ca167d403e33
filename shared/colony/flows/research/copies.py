"""Our stored copies of the pages signals quote (issue 33 item 5): what the approval card and
``colony explain`` link to, so a reviewer checks a quote against what we read, as of when.

A link is a V4 signed GET URL of the page's extracted text in the assets bucket, valid for
``COLONY_SIGNED_URL_TTL_SECONDS``; a page no longer kept (retention, an erasure) is shown as
such, and a link that cannot be signed just now (an upstream failure) says so: neither is
dropped silently.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from colony.errors import UpstreamError, error_summary
from colony.flows.deps import FlowDeps
from colony.store.research import sources

log = logging.getLogger(__name__)  # a literal "colony.…" name would count as an import


def is_url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("https://", "http://"))


def stored_copies(deps: FlowDeps, org_id: str, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
    """For each of ``urls`` (pages' final URLs): ``{"fetched_on", "stored_copy"}``, the
    link being ``{url, expires_at, expires_in_seconds}`` or ``{error: {code, message}}``."""
    wanted = sorted({u for u in urls if is_url(u)})
    if not wanted:
        return {}
    with deps.db.transaction(org_id) as cur:
        found = {r["final_url"]: r for r in sources.stored_copies(cur, wanted)}
    ttl = deps.settings.signed_url_ttl_seconds
    links: dict[str, dict[str, Any]] = {}
    for url in wanted:
        row = found.get(url)
        if row is None:
            links[url] = {"stored_copy": _error("not_found", "no stored copy of this page")}
            continue
        shown: dict[str, Any] = {"fetched_on": row["fetched_at"].date().isoformat()}
        try:
            shown["stored_copy"] = {
                "url": deps.blobs.signed_url(row["text_object"], ttl),
                "expires_at": (deps.clock() + timedelta(seconds=ttl)).isoformat(),
                "expires_in_seconds": ttl,
            }
        except UpstreamError as error:
            log.warning("stored copy not signed: %s", error_summary(error))
            shown["stored_copy"] = _error(error.code, "could not be signed just now; retry")
        links[url] = shown
    return links


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}
