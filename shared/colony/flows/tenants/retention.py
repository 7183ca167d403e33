"""Retention (issue 14 item 6): each data class kept only as long as the org chose, within
the deployment's limit (``Settings.retention_max_days``), enforced daily.

An org's period for a class is its own setting (``store.tenants.retention``), or the deployment's
limit when it set none; a setting above the limit is refused (``ValidationFailed``) and a
stored one above a limit lowered later is held to the limit. ``enforce`` runs once a day per
org (the ``retention`` schedule's task, ``functions/data-lifecycle``) with the cutoffs taken from
``deps.clock()``: expired transcripts and research pages are deleted from GCS first, then
their URIs cleared and their rows deleted (so a crash in between finds them again), and
the row-held classes expire in one statement each. Running it twice the same day finds
nothing more to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from colony.errors import ValidationFailed
from colony.flows.deps import FlowDeps
from colony.store.research import sources as research_sources
from colony.store.tenants import retention


def effective(limits: Mapping[str, int], own: Mapping[str, int]) -> dict[str, int]:
    """The period in force per data class: the org's own, held to the deployment's limit."""
    return {c: min(own.get(c, limits[c]), limits[c]) for c in retention.DATA_CLASSES}


def periods(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    limits = deps.settings.retention_max_days
    with deps.db.transaction(org_id) as cur:
        own = retention.periods(cur)
    return {"org_id": org_id, "days": effective(limits, own), "limits": dict(limits)}


def set_periods(deps: FlowDeps, org_id: str, days: Mapping[Any, int]) -> dict[str, Any]:
    """Store the org's new periods; every one must be 1 .. the deployment's limit."""
    limits = deps.settings.retention_max_days
    for data_class, value in days.items():
        if data_class not in limits:
            raise ValidationFailed(f"{data_class!r} is not a data class")
        if not 1 <= value <= limits[data_class]:
            raise ValidationFailed(
                f"days.{data_class}={value} must be 1..{limits[data_class]}"
                " (this deployment's limit)"
            )
    with deps.db.transaction(org_id) as cur:
        for data_class, value in days.items():
            retention.set_period(cur, org_id, data_class, value)
    return periods(deps, org_id)


def enforce(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """Expire what is older than each period, as of ``deps.clock()``; counts per class."""
    now = deps.clock()
    in_force = periods(deps, org_id)["days"]
    cutoffs = {c: now - timedelta(days=d) for c, d in in_force.items()}
    expired: dict[str, int] = {}
    with deps.db.transaction(org_id) as cur:
        transcripts = retention.expired_transcripts(cur, cutoffs["transcripts"])
    prefix = f"gs://{deps.blobs.bucket}/" if transcripts else ""
    for _, uri in transcripts:
        if uri.startswith(prefix) and len(uri) > len(prefix):
            deps.blobs.delete(uri[len(prefix) :])
    with deps.db.transaction(org_id) as cur:
        pages = research_sources.expired(cur, cutoffs["research"])
    for page in pages:  # objects first: a crash before the rows are gone finds them again
        for name in research_sources.objects(page):  # bytes, text, screenshot
            deps.blobs.delete(name)
    with deps.db.transaction(org_id) as cur:
        expired["research"] = research_sources.forget(cur, [p["id"] for p in pages])
        expired["transcripts"] = retention.forget_transcripts(cur, [r for r, _ in transcripts])
        for data_class in ("chat_events", "llm_calls", "outbox_bodies"):
            expired[data_class] = retention.expire(cur, data_class, cutoffs[data_class])
    return {
        "org_id": org_id,
        "as_of": now.isoformat(),
        "days": in_force,
        "expired": expired,
    }
