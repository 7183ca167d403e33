"""Cloud Tasks in process, with workers: ``TaskQueue`` is the in-process transport
(``InlineTransport``) whose tasks on one queue are also held by the time they are due, and
``work`` runs them with a number of threads, as a queue with that many concurrent
dispatches would (the research benchmark's 8 workers, ``bench/research.py``).

A task is due ``delay_seconds`` after it was scheduled; due tasks run earliest first (ties in
the order scheduled), as Cloud Tasks dispatches a backlog. A task a handler schedules (a
continuation due at its retry time) joins the same queue. Workers wait on a condition until
the next task is due or another task may have been scheduled: no sleeps, no polling. ``work``
returns when no task is due or running; a handler's exception is raised from ``work`` once
the others are done (Cloud Tasks would retry it; a benchmark must not hide it).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

from colony.adapters.transport_checks import task_name
from colony.testing.inline import InlineTransport, Task


class TaskQueue(InlineTransport):
    """``InlineTransport`` whose tasks on ``queue`` are run by ``work`` when due."""

    def __init__(
        self,
        queue: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        project: str = "colony-local",
        region: str = "us-central1",
    ) -> None:
        super().__init__(project=project, region=region)
        self.queue = queue
        self._clock = clock
        self._due: list[tuple[float, int, str]] = []  # (due time, order scheduled, name)
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._running = 0

    def schedule(
        self, queue: str, target: str, body: bytes, *, task_id: str, delay_seconds: float = 0.0
    ) -> str:
        with self._changed:
            known = task_name(self.project, self.region, queue, task_id) in self.tasks
            name = super().schedule(
                queue, target, body, task_id=task_id, delay_seconds=delay_seconds
            )
            if queue == self.queue and not known:  # a task is created once, as Cloud Tasks does
                due = self._clock() + delay_seconds
                heapq.heappush(self._due, (due, next(self._order), name))
                self._changed.notify()
        return name

    @property
    def waiting(self) -> int:
        """Tasks not yet taken by a worker."""
        with self._changed:
            return len(self._due)

    def work(self, handle: Callable[[Task], object], workers: int) -> None:
        """Run every task on the queue, and those they schedule, with ``workers`` threads,
        each task once it is due; return when none is left (module docstring)."""
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=self._worker, args=(handle, errors), name=f"task-worker-{n}")
            for n in range(workers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

    def _take(self) -> str | None:
        """The next due task's name, waiting for it; None when the queue is done."""
        with self._changed:
            while True:
                if not self._due and not self._running:
                    self._changed.notify_all()  # the others see the end too
                    return None
                wait = self._due[0][0] - self._clock() if self._due else None
                if wait is not None and wait <= 0:
                    self._running += 1
                    return heapq.heappop(self._due)[2]
                self._changed.wait(wait)  # a task scheduled or finished wakes us sooner

    def _worker(self, handle: Callable[[Task], object], errors: list[BaseException]) -> None:
        while (name := self._take()) is not None:
            try:
                handle(self.tasks[name])
            except BaseException as error:  # raised by ``work`` once every worker is done
                errors.append(error)
            finally:
                with self._changed:
                    self._running -= 1
                    self._changed.notify_all()
