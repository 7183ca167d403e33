"""The pending approval items as people see them: one card per item, made here for every
place that shows the queue to a person (the chat function's ``GET /approvals`` and the
/overview page, AGT-001's ``list_approvals`` tool, the local demo).

    card = {"id", "kind", "source_agent", "summary", "queue"}
         + {"link": {"url", "expires_at", "expires_in_seconds"}}   deployment kits
         + {"untrusted_instructions": [...]}                       when the detector found any
         + {"created_at", "campaign": {"id", "name"}|None, "detail"}  with ``detail=True``

``queue`` says whose queue the item waits in (issue 35: ``{"assignee", "assignee_name",
"role", "escalated_from", "mine"}``; ``role`` is ``"admin"`` for the admins' items, both
None for the team's): routing puts it there, anyone with the right role may still take it.
``mine`` (given the person looking) marks their own; ``mine=...`` lists only those.

``detail=True`` (the /overview page) adds what a person decides from: the draft, the
prospect, the checks, the diff (``colony.flows.approvals.approval_cards``), and the pending counts
per kind and campaign for the page's filters. AGT-001's tool keeps the short cards: the model reads
summaries, not fifty drafts.

A deployment kit's link is signed when its card is made, from the object name its
``deployment_kits`` row keeps (or the item's ``gs://`` URI): the URL stored in the item when
the kit was built expires after ``COLONY_SIGNED_URL_TTL_SECONDS`` (1 h by default), usually
long before anyone reviews it. Signing happens after the rows are read, outside the
transaction (in production it is an IAM ``signBlob`` call). A link that cannot be signed
right now (an upstream failure) is shown as such on its card, never dropped silently, and
the rest of the queue is still shown.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from colony.errors import UpstreamError, error_summary
from colony.flows.approvals import approval_cards
from colony.flows.approvals.approval_cards import CHECKED_KINDS
from colony.flows.approvals.links import signed_link
from colony.flows.outbound import senders
from colony.flows.research import copies as research
from colony.store.approvals import approvals, audit, routing

if TYPE_CHECKING:
    from colony.flows.deps import FlowDeps

log = logging.getLogger("colony.approvals")

SUMMARY_CHARS = 120


EMAILED = ("outbound_message", "follow_up")  # the kinds whose approval sends an email


def summary(item: Mapping[str, Any]) -> str:
    """One line describing an item, for cards, tool results and the chat's hydration."""
    payload = item.get("payload") or {}
    if item.get("kind") == "tool_action":
        args = json.dumps(payload.get("arguments") or {}, separators=(",", ":"))
        return f"run {payload.get('tool')} {args}"
    for key in ("subject", "title", "summary", "content"):
        if isinstance(payload.get(key), str):
            return " ".join(payload[key].split())[:SUMMARY_CHARS]
    return str(item.get("kind"))


def pending_cards(
    deps: FlowDeps,
    org_id: str,
    *,
    kind: str | None = None,
    limit: int = 50,
    campaign_id: str | None = None,
    detail: bool = False,
    viewer: str | None = None,
    mine: bool = False,
) -> dict[str, Any]:
    """The newest ``limit`` pending items (of ``kind`` and ``campaign_id``, if given; only
    ``viewer``'s own with ``mine``) as cards, and how many items are pending in all, and in
    ``viewer``'s own queue (``detail``: see the module docstring)."""
    own = viewer if mine else None
    with deps.db.transaction(org_id) as cur:
        if detail:
            rows = approvals.pending_detailed(
                cur, kind=kind, campaign_id=campaign_id, limit=limit, mine=own
            )
            facets = approvals.pending_facets(cur)
            # which mailbox each email goes from, and why its send would wait (issue 39 item 2)
            mailboxes = senders.on_cards(cur, [r for r in rows if r["kind"] in EMAILED])
        else:
            rows = approvals.pending(cur, kind=kind, limit=limit, mine=own)
        total = approvals.pending_count(cur)
        yours, admin = routing.standing(cur, viewer) if viewer else (None, False)
    counts = {"pending_total": total} | ({"pending_mine": yours} if viewer else {})
    if not detail:
        return {**counts, "items": [card(deps, row, viewer, admin) for row in rows]}
    names = _competitors(deps, org_id) if any(r["kind"] in CHECKED_KINDS for r in rows) else []
    items = []
    for row in rows:
        shown = card(deps, row, viewer, admin)
        shown["created_at"] = row["created_at"].isoformat()
        cid = row.get("campaign_id")
        shown["campaign"] = {"id": cid, "name": row.get("campaign_name")} if cid else None
        shown["detail"] = approval_cards.detail(row, names)
        if str(row["id"]) in mailboxes:
            shown["detail"]["sender"] = mailboxes[str(row["id"])]
        items.append(shown)
    _stored_copies(deps, org_id, [i["detail"] for i in items])
    return {**counts, **facets, "items": items}


def _stored_copies(deps: FlowDeps, org_id: str, details: list[dict[str, Any]]) -> None:
    """Each signal read from a web page gets our stored copy of it (a signed link) and the
    day it was fetched (issue 33): the reviewer checks the quote against what we read."""
    signals = [
        s for d in details for s in d.get("signals") or () if research.is_url(s.get("source"))
    ]
    if signals:
        copies = research.stored_copies(deps, org_id, [s["source"] for s in signals])
        for signal in signals:
            signal.update(copies[signal["source"]])


def audit_trail(
    deps: FlowDeps, org_id: str, *, item_id: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """The org's audit log as people read it, newest first (of one item, when given):
    what ``colony.flows.approvals.approval`` appended."""
    with deps.db.transaction(org_id) as cur:
        rows = audit.recent(cur, item_id=item_id, limit=limit)
    return [{**row, "at": row["at"].isoformat()} for row in rows]


def queue_changes(deps: FlowDeps, org_id: str, item_ids: list[str]) -> dict[str, Any]:
    """What became of ``item_ids`` (announced as added or decided) and the queue's counts now:
    ``{"pending_total", "kinds", "campaigns", "added": [id], "decided": [{id, status,
    decided_by, decided_at}]}``; ids not in this org are left out (RLS)."""
    with deps.db.transaction(org_id) as cur:
        rows = approvals.decided(cur, item_ids) if item_ids else []
        total = approvals.pending_count(cur)
        facets = approvals.pending_facets(cur)
    added = [str(r["id"]) for r in rows if r["status"] == "pending"]
    decided = [
        {
            "id": str(r["id"]),
            "status": r["status"],
            "decided_by": r["decided_by"],
            "decided_at": r["decided_at"].isoformat() if r["decided_at"] else None,
        }
        for r in rows
        if r["status"] != "pending"
    ]
    return {"pending_total": total, **facets, "added": added, "decided": decided}


def _competitors(deps: FlowDeps, org_id: str) -> list[str]:
    from colony.flows.tenants import org_admin  # lazy: only a listing with drafts checks them

    return org_admin.competitors(deps, org_id, org_admin.DEFAULT_COMPETITORS)


def card(
    deps: FlowDeps, row: Mapping[str, Any], viewer: str | None = None, admin: bool = False
) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": row["id"],
        "kind": row["kind"],
        "source_agent": row["source_agent"],
        "summary": summary(row),
        "queue": queue_of(row, viewer, admin),
    }
    if row["kind"] == "deployment_kit":
        shown["link"] = _kit_link(deps, row)
    flags = (row.get("payload") or {}).get("untrusted_instructions")
    if flags:  # what the detector found behind the draft: the card shows it as a warning
        shown["untrusted_instructions"] = [str(f) for f in flags]
    return shown


def queue_of(row: Mapping[str, Any], viewer: str | None, admin: bool) -> dict[str, Any]:
    """Whose queue the item waits in, and whether that is ``viewer``'s (an ``admin`` viewer
    holds the admins' items too)."""
    assignee, role = row.get("assignee"), row.get("assignee_role")
    return {
        "assignee": assignee,
        "assignee_name": row.get("assignee_name") or None,
        "role": role,
        "escalated_from": row.get("escalated_from"),
        "mine": viewer is not None and (assignee == viewer or (role == "admin" and admin)),
    }


def _kit_link(deps: FlowDeps, row: Mapping[str, Any]) -> dict[str, Any]:
    name = row.get("kit_object") or _object_name(deps, (row.get("payload") or {}).get("gcs_uri"))
    if name is None:
        return {"error": {"code": "not_found", "message": "this kit has no stored document"}}
    try:
        return signed_link(deps, name)
    except UpstreamError as error:
        log.warning("approval item %s: kit link not signed: %s", row["id"], error_summary(error))
        message = "the kit link could not be signed just now; retry shortly"
        return {"error": {"code": error.code, "message": message}}


def _object_name(deps: FlowDeps, uri: Any) -> str | None:
    """The object name in ``gs://<assets bucket>/<name>``; None for anything else."""
    prefix = f"gs://{deps.blobs.bucket}/"
    if isinstance(uri, str) and uri.startswith(prefix) and len(uri) > len(prefix):
        return uri[len(prefix) :]
    return None
