"""Inbound mail the deployment cannot read yet (issue 31 item 4): held, then drained.

Resend's ``email.received`` event names a message and carries no body; the body is read back
through the provider's API with our key (``ReceivedMail``). A deployment that never set one
up (no ``COLONY_RESEND_API_KEY``) still gets these events, genuinely signed, whenever anyone
writes to the reply address. Failing them (a 5xx) would let any stranger page us, and a
failure or a refusal (a 4xx) alike loses the reply once Svix stops retrying, days before
anyone may set the key. So the event is kept and answered 202:

    delivery-events: email.received, signed, no reader
        ─► ``hold``: held_inbound_mail (svix-id, email_id, when; never the mail) ─► 202
           (a redelivery of the same svix-id: the same row, answered the same)
    data-lifecycle: the replies-poll schedule, every 5 minutes ─► ``drain``
        no reader yet ─► nothing read; says how many wait
        a reader ─► each held event, oldest first, at most ``BATCH`` a run:
            read it ─► ``replies.ingest`` with its own svix-id as event id ─► ingested
                 (idempotent on the reply: a crash before the row is settled, or the webhook
                 redelivering the event after the drain, stores and stops nothing twice)
            the reply names no message of ours ─► rejected
            the provider no longer has it ─► missing
            the provider failed for now, or refuses our key ─► counted; stays held; the
                 drain stops and raises (Cloud Tasks retries it with backoff, and so does
                 the next run)

``rejected``, ``missing`` and ``failed`` are terminal and each is also recorded in
``rejected_deliveries``, where the operator sees what the live webhook refused. Resend keeps
a received message only as long as its plan's data retention (days, not weeks), so a reader
configured late finds older messages gone: those are ``missing``, reported once, never
retried. A message whose read still fails for now ``GIVE_UP_AFTER`` after it was held is
``failed``: by then no plan still keeps it, so a retry cannot succeed.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from colony.errors import ConfigError, NotFound, UpstreamError, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.outbound import replies
from colony.ports import ReceivedMail, RejectionRecorder
from colony.store import Row
from colony.store.outbound import held_mail

HANDLER = "held-inbound-mail"
BATCH = 100  # events one drain reads; the next run (5 minutes later) takes the rest
# Twice the longest data retention Resend lists for a plan short of a custom contract (7
# days); past it the message is gone whatever the failure says.
GIVE_UP_AFTER = timedelta(days=14)
NO_READER = (
    "inbound mail is not configured (COLONY_RESEND_API_KEY): the event is held and its mail"
    " is read once it is"
)

logger = logging.getLogger("colony.flows")


def hold(deps: FlowDeps, event_id: str, email_id: str) -> dict[str, Any]:
    """Keep an ``email.received`` event no reader can serve yet; idempotent on its svix-id.

    ``status`` is ``held`` while it waits, else what the drain made of it (a redelivery
    after the drain changes nothing)."""
    with deps.db.transaction(None) as cur:
        first = held_mail.hold(cur, event_id, email_id, deps.clock())
        status = "held" if first else held_mail.status(cur, event_id) or "held"
    if first:  # the operator's cue: replies are arriving that nothing can read
        logger.warning("inbound mail held: no reader configured", extra={"event_id": event_id})
    if status != "held":
        return {"status": status, "duplicate": True}
    return {"status": status, "duplicate": not first, "reason": NO_READER}


def drain(deps: FlowDeps, rejections: RejectionRecorder) -> dict[str, Any]:
    """Read and ingest the held events, once a reader is configured (see the module
    docstring for what becomes of each)."""
    reader = deps.inbound
    if reader is None:
        with deps.db.transaction(None) as cur:
            waiting = held_mail.count_waiting(cur)
        return {"status": "waiting", "waiting": waiting, "reason": NO_READER}
    counts = dict.fromkeys(("stored", "duplicate", "rejected", "missing", "failed"), 0)
    with deps.db.transaction(None) as cur:
        batch = held_mail.waiting(cur, BATCH)
    for row in batch:
        counts[_drain_one(deps, rejections, reader, row)] += 1
    with deps.db.transaction(None) as cur:
        waiting = held_mail.count_waiting(cur)
    return {"status": "drained", **counts, "waiting": waiting}


def _drain_one(
    deps: FlowDeps, rejections: RejectionRecorder, reader: ReceivedMail, row: Row
) -> str:
    """Read one held event's mail and ingest it; what became of it (``stored`` or
    ``duplicate``: ingested), or raise, leaving it held, when that cannot be known yet."""
    event_id = str(row["event_id"])
    try:
        mail = reader.received(str(row["email_id"]))
    except NotFound as error:  # gone from the provider: its retention ended
        return _give_up(deps, rejections, event_id, "missing", error)
    except ValidationFailed as error:  # the provider refuses the read for good
        return _give_up(deps, rejections, event_id, "failed", error)
    except (UpstreamError, ConfigError) as error:
        if isinstance(error, UpstreamError) and deps.clock() - row["held_at"] > GIVE_UP_AFTER:
            return _give_up(deps, rejections, event_id, "failed", error)
        with deps.db.transaction(None) as cur:
            held_mail.failed_for_now(cur, event_id, f"{error.code}: {error}")
        raise  # a provider that is down, or a key it refuses: retried, not given up
    try:
        outcome = replies.ingest(deps, mail, event_id=event_id)
    except NotFound as error:  # answers no message of ours
        return _give_up(deps, rejections, event_id, "rejected", error)
    with deps.db.transaction(None) as cur:
        held_mail.settle(cur, event_id, "ingested", outcome["status"], deps.clock())
    return str(outcome["status"])


def _give_up(
    deps: FlowDeps,
    rejections: RejectionRecorder,
    event_id: str,
    outcome: str,
    error: NotFound | ValidationFailed | UpstreamError,
) -> str:
    """End a held event that will never be ingested, on the record twice: its row says why,
    and ``rejected_deliveries`` lists it with what the live webhook refused; ``outcome``."""
    reason = f"{error.code}: {error}"
    with deps.db.transaction(None) as cur:
        settled = held_mail.settle(cur, event_id, outcome, reason, deps.clock())
    if settled:  # else another drain settled it first, and recorded it
        rejections.record(HANDLER, event_id, None, f"{outcome}: {reason}")
    return outcome
