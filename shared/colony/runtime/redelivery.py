"""A Pub/Sub event whose model call the provider rate-limited for longer than a short wait,
or that the shared limiter told to wait its org's turn: put back on its topic after the
provider's ``Retry-After`` (or at the retry the limiter booked) instead of sleeping through
the function's time, or being redelivered by Pub/Sub on a back-off that knows nothing of it.

    push ─► flow ─► ProviderUnavailable(retry_after > SHORT_WAIT) | RateWait(retry_after)
        ─► a ``colony-redeliver`` task (named by the event id, due after Retry-After)
        ─► the push is acknowledged: not a failure, never a dead letter
    task ─► campaign-resume ─► the same event published again on its topic

The work is durable (run steps), so the redelivered event repeats nothing that finished.
``campaign-resume`` publishes only on the topics of functions that call a model
(``colony.registry.functions``), and only an event of the org the task names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from colony.errors import ProviderUnavailable, ValidationFailed
from colony.registry.functions import FUNCTIONS, QUEUES, REDELIVER_QUEUE
from colony.runtime.limiter import RateWait
from colony.runtime.steps import StepBusy
from colony.runtime.transport import enqueue, publish

if TYPE_CHECKING:
    from colony.ports import Transport

SHORT_WAIT = 8.0  # the runner sleeps up to this itself (StructuredRunner.max_delay)
LONGEST_WAIT = 3600.0  # a longer Retry-After is held to an hour


def can_put_back(topic: str) -> bool:
    """Whether ``redeliver`` publishes on ``topic`` (the model-calling functions' topics)."""
    return topic in FUNCTIONS[QUEUES[REDELIVER_QUEUE].target].publishes


def worth_deferring(error: BaseException, last_attempt: bool = False) -> bool:
    """A limiter's wait always (its retry is booked: sooner would be refused again); a
    provider's long ``Retry-After``; or a step held by another delivery on this event's last
    delivery attempt: its holder may have died (a killed instance keeps the step until its
    lease lapses, longer than Pub/Sub's attempts last), so the event is put back for when the
    lease lapses rather than dead-lettered (found by the chaos soak)."""
    if isinstance(error, RateWait):
        return True
    wait = getattr(error, "retry_after", None)
    if wait is None:
        return False
    if isinstance(error, ProviderUnavailable):
        return bool(wait > SHORT_WAIT)
    if isinstance(error, StepBusy):
        return last_attempt
    return False


def defer(transport: Transport, topic: str, event: Any, event_id: str, wait: float) -> str:
    """Schedule ``event`` back onto ``topic`` after ``wait`` seconds; the task's name."""
    # lazy: the task model loads with the first deferral
    from colony.contracts.tasks import Redeliver

    body = Redeliver(org_id=event.org_id, topic=topic, event=event.model_dump(mode="json"))
    delay = min(max(wait, 0.0), LONGEST_WAIT)
    return enqueue(
        transport, REDELIVER_QUEUE, body, task_id=f"redeliver-{event_id}", delay_seconds=delay
    )


def redeliver(transport: Transport, body: Any) -> dict[str, Any]:
    """Publish a deferred event again (the ``colony-redeliver`` task's work)."""
    # lazy: the event models load with the first redelivery
    from colony.contracts.events import EVENT_ADAPTER

    target = FUNCTIONS[QUEUES[REDELIVER_QUEUE].target]
    if body.topic not in target.publishes:
        raise ValidationFailed(f"events are not redelivered to topic {body.topic!r}")
    event = EVENT_ADAPTER.validate_python(body.event)
    if event.org_id != body.org_id:
        raise ValidationFailed("the event's org is not the task's")
    message_id = publish(transport, body.topic, event)
    return {"redelivered": body.topic, "message_id": message_id}
