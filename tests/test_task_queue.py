"""``colony.testing.task_queue.TaskQueue``: Cloud Tasks in process with workers, as the
research benchmark runs research tasks (``bench/research.py``)."""

from __future__ import annotations

import threading
import time

import pytest

from colony.contracts.research import ResearchTask
from colony.registry.functions import RESEARCH_QUEUE
from colony.runtime.transport import enqueue
from colony.testing.inline import Task
from colony.testing.task_queue import TaskQueue


def _schedule(queue: TaskQueue, domain: str, delay: float = 0.0, name: str | None = None) -> None:
    task = ResearchTask(org_id="org_a", domain=domain, pass_no=1)
    enqueue(queue, RESEARCH_QUEUE, task, task_id=name or domain, delay_seconds=delay)


def _domain(task: Task) -> str:
    return ResearchTask.model_validate_json(task.body).domain


def test_due_tasks_run_earliest_first_and_continuations_join_the_queue() -> None:
    queue = TaskQueue(RESEARCH_QUEUE)
    _schedule(queue, "later.test", delay=0.2)
    _schedule(queue, "first.test")
    _schedule(queue, "first.test")  # the same name: created once
    ran: list[tuple[str, float]] = []
    started = time.monotonic()

    def handle(task: Task) -> None:
        ran.append((_domain(task), time.monotonic() - started))
        if _domain(task) == "first.test" and len(ran) == 1:  # waiting: due again later
            _schedule(queue, "first.test", delay=0.1, name="first-1")

    queue.work(handle, workers=1)
    assert [d for d, _ in ran] == ["first.test", "first.test", "later.test"]
    assert ran[1][1] >= 0.1 and ran[2][1] >= 0.2  # none ran before it was due
    assert queue.waiting == 0 and len(queue.tasks) == 3


def test_workers_run_tasks_at_once_and_a_handler_error_is_raised() -> None:
    queue = TaskQueue(RESEARCH_QUEUE)
    for n in range(4):
        _schedule(queue, f"site{n}.test")
    together = threading.Barrier(4, timeout=10)  # passes only if 4 run at the same time
    queue.work(lambda task: together.wait(), workers=4)

    _schedule(queue, "broken.test")
    _schedule(queue, "fine.test")
    ran: list[str] = []

    def handle(task: Task) -> None:
        if _domain(task) == "broken.test":
            raise RuntimeError("the handler broke")
        ran.append(_domain(task))

    with pytest.raises(RuntimeError, match="the handler broke"):
        queue.work(handle, workers=2)
    assert ran == ["fine.test"]  # the others ran to the end first
