"""Putting work on a topic or a queue: the one way flows and chat tools publish an event or
schedule a task through the ``Transport`` port.

A published message's data is the event's compact JSON; its attributes are ``org_id`` (which
the receiving edge checks against the event's own, ``colony.runtime.edge.decode_push``) and
``kind``. A task calls its queue's registered target function (``Queue.target``) with the
event's JSON as the body. Topic and queue names come from ``colony.registry.functions``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from colony.registry.functions import QUEUES

if TYPE_CHECKING:
    from colony.contracts.common import Strict
    from colony.contracts.events import Event
    from colony.ports import Transport


def message(event: Event) -> tuple[bytes, dict[str, str]]:
    """``event`` as it is published: its data and attributes."""
    data = json.dumps(event.model_dump(mode="json"), separators=(",", ":")).encode()
    return data, {"org_id": event.org_id, "kind": event.kind}


def publish(transport: Transport, topic: str, event: Event) -> str:
    """Publish ``event`` on ``topic``; returns the message id (the receiver's event id)."""
    data, attributes = message(event)
    return transport.publish(topic, data, attributes)


def enqueue(
    transport: Transport,
    queue: str,
    task: Strict,
    *,
    task_id: str,
    delay_seconds: float,
) -> str:
    """Schedule ``task`` (the target's whole request body) on ``queue`` for its target
    function after ``delay_seconds``; ``task_id`` names it, so the same logical task is
    created once. Returns the task name."""
    body = json.dumps(task.model_dump(mode="json")).encode()
    return transport.schedule(
        queue, QUEUES[queue].target, body, task_id=task_id, delay_seconds=delay_seconds
    )
