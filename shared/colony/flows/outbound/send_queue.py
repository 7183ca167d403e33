"""Handing an outbox message to the send step (a Cloud Tasks task on ``colony-send``): the
one hand-over every path uses (an approval, a deferral, a campaign's resume, a mailbox
connected again or resumed), below ``sending`` so the mailbox flows can use it too."""

from __future__ import annotations

from colony.flows.deps import FlowDeps
from colony.registry.functions import SEND_QUEUE
from colony.runtime.transport import enqueue


def schedule_send(
    deps: FlowDeps, org_id: str, outbox_id: str, *, attempt: str = "", delay: float = 0
) -> str:
    """Hand an outbox message to the send step (a Cloud Tasks task named by the row, so a
    re-applied approval schedules it once; ``attempt`` names a later hand-over: a resume's,
    a deferral's), after ``delay`` seconds."""
    # lazy: the task model loads with the first hand-over (pydantic models, ~15 ms)
    from colony.contracts.tasks import SendMessage

    task = SendMessage(org_id=org_id, outbox_id=outbox_id)
    name = f"send-{outbox_id}" + (f"-{attempt}" if attempt else "")
    return enqueue(deps.transport, SEND_QUEUE, task, task_id=name, delay_seconds=delay)
