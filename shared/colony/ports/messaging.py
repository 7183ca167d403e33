"""How functions reach each other (``Transport``: Pub/Sub topics and Cloud Tasks queues),
and where a delivery that can never succeed is recorded (``RejectionRecorder``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@runtime_checkable
class Transport(Protocol):
    """How functions reach each other: Pub/Sub topics and Cloud Tasks queues.

    ``publish`` returns the message id (the idempotency key downstream). ``schedule`` creates
    an HTTP task for ``target`` (a function name) after ``delay_seconds``; ``task_id`` names
    the task so the same logical task is never created twice.
    """

    def publish(self, topic: str, data: bytes, attributes: Mapping[str, str]) -> str: ...

    def schedule(
        self, queue: str, target: str, body: bytes, *, task_id: str, delay_seconds: float = 0.0
    ) -> str: ...


MAX_REJECTION_ID = 200  # characters of an event id or claimed org id a rejection keeps
MAX_REJECTION_REASON = 500


@dataclass(frozen=True, slots=True)
class Rejection:
    """One recorded rejection, as every ``RejectionRecorder`` keeps it."""

    function: str
    event_id: str | None
    claimed_org_id: str | None
    reason: str

    @classmethod
    def of(
        cls, function: str, event_id: str | None, claimed_org_id: str | None, reason: str
    ) -> Rejection:
        """Ids clipped to ``MAX_REJECTION_ID`` characters (an empty one is None), the reason
        to ``MAX_REJECTION_REASON``."""
        return cls(
            function,
            event_id[:MAX_REJECTION_ID] if event_id else None,
            claimed_org_id[:MAX_REJECTION_ID] if claimed_org_id else None,
            reason[:MAX_REJECTION_REASON],
        )


@runtime_checkable
class RejectionRecorder(Protocol):
    """Where unrecoverable deliveries are recorded (ids and a reason, never the payload),
    kept as ``Rejection.of`` normalises them."""

    def record(
        self, function: str, event_id: str | None, claimed_org_id: str | None, reason: str
    ) -> None: ...
