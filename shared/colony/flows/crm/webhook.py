"""HubSpot's webhook (issue 36 item 2): a signed batch of CRM events → kept per org → applied
by a task (``colony.flows.crm.events.drain``).

    HubSpot POSTs up to 100 events ─► ``receive``: the v3 signature checked
        (``X-HubSpot-Signature-v3``: base64 HMAC-SHA256, keyed by the app's client secret,
        over method + URI + body + ``X-HubSpot-Request-Timestamp``; a timestamp older than
        five minutes, or from the future past that, is refused: a replay) ─► each event's
        portal mapped to the org that holds it (``resource_claims``, kind ``hubspot_portal``:
        one org per portal) ─► kept in ``crm_events`` (idempotent on HubSpot's ``eventId``)
        ─► one drain task per org and burst window

Refusals: a bad or missing signature, or an old timestamp, is 401 and recorded in
``rejected_deliveries`` (function ``admin``, which serves it; reason ``hubspot_<why>``; never
a body). An event naming a portal no org holds
is recorded and dropped from the batch (a portal that was disconnected: its org asked us to
stop); a batch with nothing else is 403 ``org_scope``. Events of a portal go only to the
org that holds it. A malformed body is 400. Nothing here calls HubSpot: the answer is quick,
and a paused connection or a limit reached never loses an event (they wait in the table).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from colony.errors import ConfigError, OrgScopeError, Unauthorized, ValidationFailed
from colony.flows.crm.apply import PROVIDER
from colony.flows.crm.connections import KIND
from colony.flows.crm.events import schedule_drain
from colony.flows.deps import FlowDeps
from colony.store import claims
from colony.store.crm import events as inbox
from colony.store.rejections import DbRejections

HANDLER = "admin"  # the function that serves it (rejected_deliveries.function)
WINDOW_MS = 5 * 60 * 1000
MAX_EVENTS = 100
ACTIONS = {
    "creation": "change",
    "propertyChange": "change",
    "associationChange": "change",
    "restore": "change",
    "deletion": "deletion",
    "privacyDeletion": "deletion",
    "merge": "merge",
}
OBJECTS = ("contact", "company", "deal")
# HubSpot decodes these in the URI it signs (its request-validation page): so must we.
_DECODED = {
    "%3A": ":",
    "%2F": "/",
    "%3F": "?",
    "%40": "@",
    "%21": "!",
    "%24": "$",
    "%27": "'",
    "%28": "(",
    "%29": ")",
    "%2A": "*",
    "%2C": ",",
    "%3B": ";",
}


def signature(secret: str, method: str, uri: str, body: bytes, timestamp: str) -> str:
    """HubSpot's v3 signature of a request (the stand-in signs with it too)."""
    for encoded, plain in _DECODED.items():
        uri = uri.replace(encoded, plain).replace(encoded.lower(), plain)
    source = method.upper().encode() + uri.encode() + body + timestamp.encode()
    digest = hmac.new(secret.encode(), source, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


REFUSALS = {
    "unsigned": "the HubSpot event is not signed (no X-HubSpot-Signature-v3 and timestamp)",
    "stale_timestamp": "the HubSpot event's timestamp is outside the five-minute window",
    "bad_signature": "the X-HubSpot-Signature-v3 does not match the request",
}


def refusal(
    secret: str | None,
    method: str,
    uri: str,
    body: bytes,
    given: str | None,
    timestamp: str | None,
    now_ms: int,
) -> str | None:
    """Why this request is not one HubSpot signed lately (a ``REFUSALS`` key), or None."""
    if not secret:
        raise ConfigError("COLONY_HUBSPOT_CLIENT_SECRET is required to accept HubSpot events")
    if not given or not timestamp:
        return "unsigned"
    if not timestamp.isdigit() or abs(now_ms - int(timestamp)) > WINDOW_MS:
        return "stale_timestamp"
    expected = signature(secret, method, uri, body, timestamp)
    if not hmac.compare_digest(expected.encode(), given.strip().encode()):
        return "bad_signature"
    return None


def receive(
    deps: FlowDeps,
    raw: bytes,
    *,
    method: str,
    uri: str,
    signature_v3: str | None,
    timestamp: str | None,
) -> dict[str, Any]:
    """Handle one delivery (``raw``: the exact body bytes; ``uri``: the URL HubSpot called)."""
    now_ms = int(deps.clock().timestamp() * 1000)
    secret = deps.settings.hubspot_client_secret
    refused_why = refusal(secret, method, uri, raw, signature_v3, timestamp, now_ms)
    if refused_why is not None:
        DbRejections(deps.db).record(HANDLER, None, None, f"hubspot_{refused_why}")
        raise Unauthorized(REFUSALS[refused_why])
    by_portal = _parse(raw)
    accepted, new, refused = 0, 0, 0
    for portal, events in sorted(by_portal.items()):
        with deps.db.transaction(None) as cur:
            org = claims.owner(cur, KIND, portal)
        if org is None:
            refused += len(events)
            reason = f"hubspot_unknown_portal: portal {portal[:20]!r} is held by no org"
            DbRejections(deps.db).record(HANDLER, events[0]["event_id"], None, reason)
            continue
        with deps.db.transaction(org) as cur:
            new += inbox.add(cur, org, PROVIDER, events)
        accepted += len(events)
        schedule_drain(deps, org)
    if accepted == 0 and refused:
        raise OrgScopeError("no organisation holds the HubSpot portal these events name")
    return {"status": "accepted", "events": accepted, "new": new, "refused": refused}


def _parse(raw: bytes) -> dict[str, list[dict[str, Any]]]:
    """The batch's events we act on, by portal (other subscription types are skipped)."""
    try:
        body = json.loads(raw)
    except ValueError:
        raise ValidationFailed("a HubSpot webhook body is a JSON array of events") from None
    if not isinstance(body, list) or len(body) > MAX_EVENTS:
        raise ValidationFailed(f"a HubSpot webhook body is a JSON array of 1 to {MAX_EVENTS}")
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in body:
        if not isinstance(event, dict):
            raise ValidationFailed("each HubSpot event is a JSON object")
        kind = str(event.get("subscriptionType") or "")
        object_type, _, change = kind.partition(".")
        if object_type not in OBJECTS or change not in ACTIONS:
            continue
        parsed = _event(event, object_type, ACTIONS[change])
        found[parsed.pop("portal")].append(parsed)
    return found


def _id(value: Any, what: str) -> str:
    text = str(value) if isinstance(value, int | str) else ""
    if not text.isdigit() or len(text) > 64:
        raise ValidationFailed(f"a HubSpot event's {what} is not an id")
    return text


def _event(event: dict[str, Any], object_type: str, action: str) -> dict[str, Any]:
    occurred = event.get("occurredAt")
    if not isinstance(occurred, int):
        raise ValidationFailed("a HubSpot event needs its occurredAt (epoch milliseconds)")
    merged: list[str] = []
    object_id = event.get("objectId")
    if action == "merge":
        survivor = event.get("newObjectId") or event.get("primaryObjectId") or object_id
        object_id = survivor
        ids = [*(event.get("mergedObjectIds") or []), event.get("primaryObjectId")]
        named = {_id(i, "mergedObjectIds") for i in ids if i is not None}
        merged = sorted(named - {str(survivor)})
    return {
        "portal": _id(event.get("portalId"), "portalId"),
        "event_id": _id(event.get("eventId"), "eventId"),
        "object_type": object_type,
        "object_id": _id(object_id, "objectId"),
        "action": action,
        "merged_ids": merged,
        "occurred_at": datetime.fromtimestamp(occurred / 1000, UTC).isoformat(),
    }
