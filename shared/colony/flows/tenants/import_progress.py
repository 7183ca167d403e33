"""How an org's imports are doing, as the API, the CLI and /overview show them: the job rows
(counts, status, a failed file's reason), never a file's content. Kept apart from
``flows.tenants.imports`` so the chat function can show progress without carrying the importer
(its validators and encoding detection)."""

from __future__ import annotations

from typing import Any

from colony.flows.deps import FlowDeps
from colony.store.tenants import imports

RECENT = 20
_HIDDEN = ("object_name", "declared_bytes", "content_sha256")


def view(row: dict[str, Any]) -> dict[str, Any]:
    """A job as the API and the CLI show it."""
    shown = {k: row[k] for k in row if k not in _HIDDEN}
    for key in ("created_at", "started_at", "finished_at"):
        shown[key] = row[key].isoformat() if row[key] else None
    return shown


def recent(deps: FlowDeps, org_id: str, limit: int = RECENT) -> list[dict[str, Any]]:
    """The org's newest import jobs, newest first."""
    with deps.db.transaction(org_id) as cur:
        return [view(r) for r in imports.recent_jobs(cur, limit)]
