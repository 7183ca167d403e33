"""The stand-in web (``colony.testing.web_server``) with a generated population of companies
(``colony.testing.web.population``), served from a process of its own: a benchmark's
runner process then holds only the runner (its peak RSS is the runner's) and shares no GIL
with the server's handler threads.

``web_process`` starts the child (``spawn``: none of the parent's threads or connections
are copied), which builds the sites, starts the server and answers the parent's questions
over a pipe: its counters, every request as answered, the errors a site raised. Closing it
stops the server; a site that raised is raised here, as ``WebServer.__exit__`` does.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any, cast

from colony.testing.web.population import Listed, add_population
from colony.testing.web.realism import Realism
from colony.testing.web.traffic import WebCounters

Answered = tuple[str, str, int | None, int]  # host, path, status, bytes sent


def _serve(conn: Connection, companies: int, seed: int, realism: Realism | None) -> None:
    from colony.testing.web_server import WebServer  # in the child only

    web = WebServer(seed, realism=realism)
    listed = add_population(web, companies)
    web.start()
    try:
        conn.send({"setting": web.research_setting(), "companies": listed})
        while (command := conn.recv()) != "stop":
            if command == "counters":
                conn.send(web.counters())
            elif command == "answers":
                conn.send([(r.host, r.path, r.status, r.bytes_sent) for r in web.requests])
    finally:
        web.close()
        conn.send([repr(error) for error in web.handler_errors])


class WebProcess:
    """``companies`` generated companies (and the hard cases) on the stand-in web, with
    ``realism``, in a child process (``web_process``: for a block)."""

    def __init__(self, companies: int, seed: int, realism: Realism | None = None) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve,
            args=(child, companies, seed, realism),
            name="colony-web-process",
            daemon=True,  # ended with its parent, however that ends
        )
        self._process.start()
        ready = self._conn.recv()
        self.setting: str = ready["setting"]  # COLONY_RESEARCH_WEB
        self.companies: list[Listed] = ready["companies"]

    def counters(self) -> WebCounters:
        return cast(WebCounters, self._ask("counters"))

    def answers(self) -> list[Answered]:
        """Every request so far, in arrival order, as answered."""
        return cast(list[Answered], self._ask("answers"))

    def _ask(self, command: str) -> Any:
        self._conn.send(command)
        return self._conn.recv()

    def close(self) -> None:
        errors = self._ask("stop")
        self._process.join(30)
        if errors:
            raise RuntimeError(f"a stand-in site raised: {errors[0]}")


@contextmanager
def web_process(companies: int, seed: int, realism: Realism | None = None) -> Iterator[WebProcess]:
    """A ``WebProcess`` for the block, closed after it."""
    web = WebProcess(companies, seed, realism)
    try:
        yield web
    finally:
        web.close()
