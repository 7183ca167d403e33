"""The mail provider's webhook (Resend; issue 18): delivery events and inbound replies.

    Resend (via Svix) ─► verify svix-id / svix-timestamp / svix-signature over the raw body
        (``colony.webhooks.verify_svix``: 5-minute window, a replay outside it is refused)
        ─► email.delivered / .bounced / .complained / .suppressed
              ─► the message named by our tags ─► ``colony.flows.outbound.delivery.record``
                 (a bounce classified by its codes first: ``colony.policy.bounces``)
        ─► email.received ─► the body and headers, read back through the API
              ─► ``colony.flows.outbound.replies.ingest``
           (no reader configured: held, answered 202, drained once there is one:
            ``colony.flows.outbound.held_mail``)
        ─► anything else (sent, opened, clicked, delivery_delayed): ignored

Event names, theirs → ours: ``email.delivered`` → delivered; ``email.bounced`` → bounced, as
its codes say: the enhanced status code in ``bounce.diagnosticCode`` (``smtp; 550 5.1.1 …``)
decides, else ``bounce.type`` (``Permanent``: hard; ``Transient``, ``Undetermined``: soft). A
hard bounce suppresses the address; a soft one is counted on the message and against the
address, which is suppressed once its soft bounces are exhausted (Resend has retried the
message itself before it reports one). ``email.complained`` → complained;
``email.suppressed`` (Resend refused to send to an address on its own suppression list) →
bounced, for good. Our message is named by the ``org_id`` and ``outbox_id`` tags the send
attached, else by its Message-ID. Only the codes are kept, never the report's text.

A delivery that does not verify, or cannot be read, is recorded in ``rejected_deliveries``
and refused (401 / 422); one naming no message of ours (or another org's) is recorded and
answered 404. The svix-id is the idempotency key of a delivery event. A genuine
``email.received`` on a deployment with no reader of received mail is never a 5xx: anyone
can write to the reply address, and the reply must survive until a reader is configured.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from colony.errors import ConfigError, NotFound, Unauthorized, Unprocessable, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.outbound import delivery, held_mail, replies
from colony.policy import bounces
from colony.ports import RejectionRecorder
from colony.store.outbound import replies as replies_store
from colony.svix import verify_svix
from colony.webhooks import untag

HANDLER = "delivery-events"
DELIVERY: dict[str, delivery.DeliveryEvent] = {
    "email.delivered": "delivered",
    "email.bounced": "bounced",
    "email.complained": "complained",
    "email.suppressed": "bounced",
}
RECEIVED = "email.received"
MAX_ID = 200


class Headers(Protocol):
    def get(self, key: str, /) -> str | None: ...


def receive(
    deps: FlowDeps, rejections: RejectionRecorder, raw: bytes, headers: Headers
) -> dict[str, Any]:
    """Handle one webhook delivery (``raw``: the exact body bytes)."""
    secret = deps.settings.delivery_webhook_secret
    if not secret:
        raise ConfigError(
            "COLONY_DELIVERY_WEBHOOK_SECRET (the provider's whsec_ signing secret) is not set;"
            " mail events are refused"
        )
    event_id = (headers.get("svix-id") or "")[:MAX_ID] or None
    try:
        event_id = verify_svix(secret, raw, headers, "mail provider")[:MAX_ID]
        kind, data = _parse(raw)
    except (Unauthorized, ValidationFailed) as error:
        rejections.record(HANDLER, event_id, None, f"{error.code}: {error}")
        raise
    try:
        if kind == RECEIVED:
            email_id = _text(data, "email_id")
            reader = deps.inbound
            if reader is None:
                return held_mail.hold(deps, event_id, email_id)
            return replies.ingest(deps, reader.received(email_id), event_id=event_id)
        if kind not in DELIVERY:
            return {"status": "ignored", "event": kind}
        bounce = _bounce(kind, data)
        org_id, outbox_id = _message_of(deps, data)
        return delivery.record(deps, org_id, outbox_id, DELIVERY[kind], event_id, bounce=bounce)
    except NotFound as error:
        rejections.record(HANDLER, event_id, None, f"{error.code}: {error}")
        raise


def _parse(raw: bytes) -> tuple[str, dict[str, Any]]:
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Unprocessable("the event body is not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise Unprocessable("the event has no type")
    data = body.get("data")
    if not isinstance(data, dict):
        raise Unprocessable(f"the {body['type'][:60]!r} event has no data object")
    return body["type"][:100], data


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        raise Unprocessable(f"the event's data.{name} is missing or malformed")
    return value


def _bounce(kind: str, data: dict[str, Any]) -> bounces.Bounce | None:
    """A bounce event's classification: its diagnostic code's, else its type's."""
    if kind == "email.suppressed":
        return bounces.classify(reported="permanent")
    if kind != "email.bounced":
        return None
    bounce = data.get("bounce")
    bounce = bounce if isinstance(bounce, dict) else {}
    diagnostic = bounce.get("diagnosticCode")
    if isinstance(diagnostic, list):
        diagnostic = next((d for d in diagnostic if isinstance(d, str)), None)
    smtp, status = bounces.parse(diagnostic if isinstance(diagnostic, str) else None)
    reported = bounce.get("type")
    return bounces.classify(smtp, status, reported=reported if isinstance(reported, str) else None)


def _message_of(deps: FlowDeps, data: dict[str, Any]) -> tuple[str, str]:
    """(org, outbox id) of the message an event is about: from the tags we sent, else from
    its Message-ID (when the provider kept ours)."""
    tags = data.get("tags")
    if isinstance(tags, dict):
        org, outbox_id = tags.get("org_id"), tags.get("outbox_id")
        if isinstance(org, str) and isinstance(outbox_id, str) and org and outbox_id:
            return untag(org)[:MAX_ID], untag(outbox_id)[:MAX_ID]
    message_id = data.get("message_id")
    if isinstance(message_id, str) and message_id:
        org_id = replies_store.org_of_message(deps.db, [message_id[:500]])
        if org_id is not None:
            outbox_id = message_id.strip("<>").partition("@")[0]
            return org_id, outbox_id
    raise NotFound("the event names no message of ours (no colony tags, unknown Message-ID)")
