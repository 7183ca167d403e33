"""HubSpot's shapes that need no SDK, shared by the adapter (``colony.adapters.hubspot``) and
the in-memory fake (``colony.testing.crm_memory``): its timestamps, an engagement as HubSpot's
properties and association types, and whether a deal update conflicts with what HubSpot holds
now (``decide``: the port's rule, ``colony.ports.crm``); what its rate-limit headers say and
what its refusals mean to us (``mapped_error``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from colony.errors import (
    CrmAccessRefused,
    CrmConflict,
    NotFound,
    ProviderError,
    ValidationFailed,
)
from colony.ports import Engagement, FieldChange, FieldConflict, RateLimit

# HubSpot's association type ids (HUBSPOT_DEFINED) from an engagement to a record.
ENGAGEMENT_LINKS: dict[tuple[str, str], int] = {
    ("email", "contacts"): 198,
    ("email", "companies"): 186,
    ("email", "deals"): 210,
    ("note", "contacts"): 202,
    ("note", "companies"): 190,
    ("note", "deals"): 214,
    ("call", "contacts"): 194,
    ("call", "companies"): 182,
    ("call", "deals"): 206,
}


def iso(when: datetime | str | None) -> str | None:
    """A HubSpot time as the port writes it: UTC, milliseconds, ``Z``."""
    if when is None:
        return None
    if isinstance(when, str):
        when = datetime.fromisoformat(when.replace("Z", "+00:00"))
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    utc = when.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


Latest = Mapping[str, tuple[str | None, str | None]]  # field → (value, when it was set)


def decide(
    changes: Sequence[FieldChange], latest: Latest
) -> tuple[dict[str, str], list[FieldConflict]]:
    """(what to write, what conflicts): a field already holding our value needs no write; one
    still holding what we read, set when we read it, is written (None as HubSpot clears a
    value: ""); any other is a conflict naming both values."""
    pending: dict[str, str] = {}
    conflicts: list[FieldConflict] = []
    for change in changes:
        theirs, changed_at = latest.get(change.name, (None, None))
        if _same(theirs, change.value):
            continue  # already so (a retried update finds its own write)
        if _same(theirs, change.read_value) and _same_time(changed_at, change.read_at):
            pending[change.name] = "" if change.value is None else change.value
            continue
        conflicts.append(
            FieldConflict(change.name, change.value, change.read_value, theirs, changed_at)
        )
    return pending, conflicts


def conflict_error(deal_id: str, conflicts: Sequence[FieldConflict]) -> CrmConflict:
    named = ", ".join(c.name for c in conflicts)
    return CrmConflict(
        f"HubSpot changed {named} on deal {deal_id!r} since it was read",
        conflicts=tuple(conflicts),
    )


def _same(a: str | None, b: str | None) -> bool:
    return (a or "") == (b or "")


def _same_time(a: str | None, b: str | None) -> bool:
    return iso(a) == iso(b) if a and b else a is None and b is None


def engagement_properties(engagement: Engagement) -> dict[str, str]:
    """An engagement as HubSpot's email, note or call properties."""
    when = str(iso(engagement.timestamp))
    if engagement.kind == "email":
        incoming = engagement.direction == "inbound"
        return {
            "hs_timestamp": when,
            "hs_email_direction": "INCOMING_EMAIL" if incoming else "EMAIL",
            "hs_email_status": "SENT",
            "hs_email_subject": engagement.subject or "",
            "hs_email_text": engagement.body,
        }
    if engagement.kind == "call":
        return {
            "hs_timestamp": when,
            "hs_call_title": engagement.subject or "",
            "hs_call_body": engagement.body,
            "hs_call_status": "COMPLETED",
        }
    return {"hs_timestamp": when, "hs_note_body": engagement.body}


_LIMIT_HEADERS = {
    "interval_max": "x-hubspot-ratelimit-max",
    "interval_remaining": "x-hubspot-ratelimit-remaining",
    "interval_ms": "x-hubspot-ratelimit-interval-milliseconds",
    "daily_max": "x-hubspot-ratelimit-daily",
    "daily_remaining": "x-hubspot-ratelimit-daily-remaining",
}


def rate_limit_of(headers: Mapping[str, str] | None) -> RateLimit | None:
    """What an answer's ``X-HubSpot-RateLimit-*`` headers say (None: nothing)."""
    if not headers:
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    values = {f: _int(lowered.get(h)) for f, h in _LIMIT_HEADERS.items()}
    return RateLimit(**values) if any(v is not None for v in values.values()) else None


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def probability(value: Any) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def body_of(error: Any) -> dict[str, Any]:
    try:
        body = json.loads(error.body or b"{}")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def reason_of(error: Any) -> str:
    body = body_of(error)
    return str(body.get("category") or body.get("policyName") or body.get("status") or "")[:80]


def mapped_error(error: Any) -> Exception:
    status, reason = error.status, reason_of(error)
    if status in (401, 403):
        return CrmAccessRefused(f"HubSpot refused the token ({status} {reason})", reason=reason)
    if status == 404:
        return NotFound("HubSpot has no such record")
    if status == 400:
        message = str(body_of(error).get("message") or "HubSpot refused the request")
        return ValidationFailed(f"HubSpot: {message[:300]}")
    return ProviderError(f"HubSpot answered {status}", reason=reason)
