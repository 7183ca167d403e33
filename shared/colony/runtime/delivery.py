"""Which delivery attempt of a Pub/Sub message is running, so a flow can record a failure
before the platform gives up on the message.

Every push subscription has a dead-letter policy (terraform/pubsub.tf), so Pub/Sub puts
``deliveryAttempt`` (1-based) in the push body, and after the topic's
``max_delivery_attempts`` failures it moves the message to the dead-letter topic: no code of
ours runs for it again. A flow that leaves visible state half-way while it works (a recording
in ``processing``) wraps its work in ``on_give_up(record)``: when an error ends the delivery
for good, ``record(reason)`` runs first, then the error propagates unchanged, so the edge
still rejects or nacks it and the message is still dead-lettered for inspection and replay.

An error ends the delivery for good when it is a caller error (the edge acknowledges it and
never retries) or when this is the last attempt, unless the edge defers it (a shared limit's
``RateWait``, a provider's long ``Retry-After``: ``colony.runtime.redelivery``), which
publishes the same event again later. An ``InternalError`` (ours to fix: a missing
key, a broken template) is retried like an upstream failure, so it is final only on the last
attempt. ``pubsub_handler`` sets the attempt from the push body; the inline test transport
sets it the same way. With no attempt set (a subscription without a dead-letter policy, a
direct call) only caller errors count as final.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from colony.errors import CallerError, error_summary
from colony.runtime.redelivery import worth_deferring
from colony.runtime.steps import StepBusy

log = logging.getLogger("colony.runtime")


@dataclass(frozen=True, slots=True)
class Attempt:
    """This delivery's attempt number and the topic's limit (either unknown: None)."""

    number: int | None  # Pub/Sub's deliveryAttempt; None when the push did not say
    limit: int | None  # the topic's max_delivery_attempts; None when not a topic's delivery

    @property
    def last(self) -> bool:
        return self.number is not None and self.limit is not None and self.number >= self.limit


_current: ContextVar[Attempt | None] = ContextVar("colony_delivery_attempt", default=None)


@contextmanager
def attempt(number: int | None, limit: int | None) -> Iterator[Attempt]:
    """Run the body as delivery attempt ``number`` of at most ``limit``."""
    current = Attempt(number, limit)
    token = _current.set(current)
    try:
        yield current
    finally:
        _current.reset(token)


def current() -> Attempt | None:
    return _current.get()


def final_reason(error: BaseException) -> str | None:
    """Why ``error`` ends this delivery for good (no message text: it might quote content),
    or None when the delivery will be retried."""
    if isinstance(error, CallerError):
        return f"rejected, not retried: {error_summary(error)}"
    if isinstance(error, StepBusy):  # put back for when the holder's lease lapses, not ended
        return None
    if worth_deferring(error):  # the edge puts the event back for later: not the end of it
        return None
    now = _current.get()
    if now is not None and now.last:
        return f"gave up after {now.number} delivery attempts: {error_summary(error)}"
    return None


@contextmanager
def on_give_up(record: Callable[[str], None]) -> Iterator[None]:
    """Call ``record(reason)`` when the body's error ends the delivery for good; re-raise."""
    try:
        yield
    except Exception as error:
        reason = final_reason(error)
        if reason is not None:
            try:
                record(reason)
            except Exception as failed:  # the original error matters more; it still propagates
                log.error("recording a final failure failed: %s", type(failed).__name__)
        raise
