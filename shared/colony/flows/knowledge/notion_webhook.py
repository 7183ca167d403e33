"""Flow 4, Notion sync, the webhook half (SPEC §6.4; seed §3.2): event → Cloud Tasks job.

    Notion event ─► receive: answer the verification handshake, verify X-Notion-Signature over
        the raw body, ignore replays (event id), map the page (or its database) to KC-01..07
        (or, unmapped, one we hold chunks of: it moved out) ─► one Cloud Tasks job per page
        and burst window, named by page id + window and run after the window closes (a burst
        of edits collapses into one task that reads all of them; ``burst_window``; stale jobs
        are harmless: the worker, ``flows.knowledge.notion_reembed``, reads the page as it is now)

Model-free: nothing here (or below it) imports the LLM, context or knowledge packages, so the
webhook's bundle carries no model or embedding SDK.

The signing secret belongs to the integration's one subscription, which delivers the events
of every workspace that installed it; the event's ``workspace_id`` names the workspace, and
the workspace an org connected (``flows.knowledge.notion_workspaces``) names the org and its KC
mapping. An event from a workspace no org connected is refused (403 ``org_scope``) and
recorded, never routed to a default org; so is one from a workspace whose row is not
``connected`` (``store.knowledge.notion_workspaces.ROUTE``), or that the daily re-proof
released (``notion_workspaces.reprove``: its row is gone), so a squat found out stops
receiving events.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from colony.contracts.reembed import NotionReembed
from colony.errors import OrgScopeError, RateLimited, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.knowledge.notion_pages import domain_for
from colony.registry.functions import NOTION_REEMBED_QUEUE
from colony.runtime import idempotency
from colony.runtime.transport import enqueue
from colony.store.knowledge import notion, notion_workspaces
from colony.store.rejections import DbRejections
from colony.webhooks import compact_id, verify_signature

HANDLER = "notion-webhook"
# The handshake is unauthenticated (Notion sends it before there is a secret to sign with), so
# what it may write is bounded: this many per window are stored, the rest answered 429, and
# only the newest HANDSHAKES_KEPT are kept (store.knowledge.notion; the database clamps both).
HANDSHAKES_PER_WINDOW = 5
HANDSHAKE_WINDOW_SECONDS = 3600
HANDSHAKES_KEPT = 20
BURST_WINDOW_SECONDS = 5  # a page's events received within one window share one task
SETTLE_SECONDS = 1.0  # the task runs this long after its window closes
# Events that change what a page says (or whether it exists); others (comments, views...)
# are acknowledged and ignored.
PAGE_EVENTS = frozenset(
    {
        "page.created",
        "page.content_updated",
        "page.properties_updated",
        "page.moved",
        "page.deleted",
        "page.undeleted",
        "page.locked",
        "page.unlocked",
    }
)


def receive(deps: FlowDeps, raw: bytes, signature: str | None) -> dict[str, Any]:
    """Handle one Notion webhook delivery (``raw``: the exact body bytes)."""
    body = _json(raw)
    if signature is None and isinstance(body, dict) and set(body) == {"verification_token"}:
        return _verification(deps, body["verification_token"])
    verify_signature(deps.settings.notion_signing_secret, raw, signature)
    if not isinstance(body, dict):
        raise ValidationFailed("a Notion event is a JSON object")
    event_id, kind = body.get("id"), body.get("type")
    entity = _object(body.get("entity"))
    if not isinstance(event_id, str) or not event_id or not isinstance(kind, str):
        raise ValidationFailed("a Notion event needs an id and a type")
    if kind not in PAGE_EVENTS or entity.get("type") != "page":
        return {"status": "ignored", "reason": f"{kind} is not a page content event"}
    workspace_id = body.get("workspace_id")
    if not isinstance(workspace_id, str) or not 1 <= len(workspace_id) <= 100:
        raise ValidationFailed("a Notion event needs its workspace_id")
    org, domains = _route(deps, workspace_id, event_id)
    page_id = compact_id(str(entity.get("id") or ""))
    if len(page_id) != 32 or not all(c in "0123456789abcdef" for c in page_id):
        raise ValidationFailed("entity.id is not a Notion page id")
    event_key = event_id[:200]
    if idempotency.seen(deps.db, org, HANDLER, event_key):
        return {"status": "duplicate"}
    parent = _object(_object(body.get("data")).get("parent"))
    domain = domain_for(domains, page_id, parent.get("id"))
    if domain is None and not _has_chunks(deps, org, page_id):
        idempotency.mark(deps.db, org, HANDLER, event_key, detail="unmapped")
        return {"status": "ignored", "reason": "the page is not mapped to a KC domain"}
    # Unmapped but known (moved out of a mapped database): the worker removes its chunks.
    edited = str(body.get("timestamp") or event_id)[:64]
    job = NotionReembed(
        org_id=org,
        workspace_id=workspace_id,
        page_id=page_id,
        domain=domain,  # type: ignore[arg-type]
        edited_time=edited,
    )
    window, delay = burst_window(deps.clock().timestamp())
    task = enqueue(
        deps.transport,
        NOTION_REEMBED_QUEUE,
        job,
        # the workspace is in the name: two orgs' events never collapse into one task
        task_id=f"notion-{_digest(workspace_id)}-{page_id}-w{window}",
        delay_seconds=delay,
    )
    idempotency.mark(deps.db, org, HANDLER, event_key, detail=task[-200:])
    return {"status": "queued", "page_id": page_id, "domain": domain}


def burst_window(received: float) -> tuple[int, float]:
    """The burst window an event received at ``received`` (epoch seconds, our clock) falls
    in, and how long until its task may run: ``SETTLE_SECONDS`` after the window closes.

    Every event for a page received in one window names the same task, so a burst of edits
    is one re-embed. No edit is lost: an event arrives after its edit was made and before its
    window closes, and the task reads the page only after the window has closed; an event
    received later belongs to the next window, hence to a new task. Our clock alone decides
    (Notion's timestamps play no part), so clock skew cannot make a task read too early."""
    window = int(received // BURST_WINDOW_SECONDS)
    return window, (window + 1) * BURST_WINDOW_SECONDS + SETTLE_SECONDS - received


def _digest(workspace_id: str) -> str:
    return hashlib.sha256(workspace_id.encode()).hexdigest()[:12]


def _route(deps: FlowDeps, workspace_id: str, event_id: str) -> tuple[str, dict[str, str]]:
    """The org that connected ``workspace_id`` and its KC mapping; refused (and recorded, by
    ids only) when no org did."""
    with deps.db.transaction(None) as cur:
        row = notion_workspaces.route(cur, workspace_id)
    if row is None:
        reason = f"unknown_workspace: {workspace_id[:100]!r} is not connected to any org"
        DbRejections(deps.db).record(HANDLER, event_id, None, reason)
        raise OrgScopeError(f"Notion workspace {workspace_id!r} is not connected to any org")
    return str(row["org_id"]), dict(row["domains"])


def _has_chunks(deps: FlowDeps, org: str, page_id: str) -> bool:
    with deps.db.transaction(org) as cur:
        return notion.has_chunks(cur, page_id)


def _verification(deps: FlowDeps, token: Any) -> dict[str, Any]:
    """Notion's one-time handshake: keep the token for the operator (it becomes the signing
    secret once pasted back into Notion); never log or echo it."""
    if not isinstance(token, str) or not 1 <= len(token) <= 200:
        raise ValidationFailed("verification_token must be a short string")
    with deps.db.transaction(None) as cur:
        stored = notion.add_verification(
            cur,
            token,
            deps.clock(),
            per_window=HANDSHAKES_PER_WINDOW,
            window_seconds=HANDSHAKE_WINDOW_SECONDS,
            keep=HANDSHAKES_KEPT,
        )
    if not stored:
        raise RateLimited(
            "too many verification handshakes; try again later",
            retry_after=HANDSHAKE_WINDOW_SECONDS,
        )
    return {"status": "verification_received"}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        return None  # an unsigned non-JSON body is refused by the signature check
