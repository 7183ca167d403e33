"""A research world for tests and the benchmark: the stand-in web (``colony.testing.web_server``),
the real polite, safe fetcher pointed at it, the GCS emulator's bucket, the Knowledge Core's
offline embedder over the real embedded PostgreSQL, and the inline transport; and
``drain``, which runs the research tasks the transport holds as Cloud Tasks would (the
function's handler, ``colony.flows.research.run``), until none is left."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from colony.adapters.chromium import ChromiumRenderer, RenderLimits
from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.polite_web import PoliteWebFetcher
from colony.adapters.web import Limits, SafeFetcher, user_agent
from colony.adapters.web_body import PAGE_TYPES, SUBRESOURCE_TYPES
from colony.adapters.web_guard import AddressGuard
from colony.contracts.research import ResearchTask
from colony.env_values import research_web
from colony.flows.research import runner
from colony.knowledge import KnowledgeStore
from colony.ports import BlobStore
from colony.registry.functions import RESEARCH_QUEUE
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.web_server import WebServer

CONTACT = "https://colony.example/research"


GAP = 0.1  # seconds between two requests to one site: the pace itself is tested at 1 s
# (tests/test_research_sites.py); here it only slows the runner's tests down


def fetcher(
    db: Database,
    web: WebServer,
    limits: Limits | None = None,
    gap: float = GAP,
    accept: frozenset[str] = PAGE_TYPES,
) -> PoliteWebFetcher:
    local = research_web(web.research_setting(), "local")
    guard = AddressGuard(local=local)
    safe = SafeFetcher(user_agent(CONTACT), guard=guard, limits=limits)
    return PoliteWebFetcher(db, safe, gap=gap, accept=accept)


CHROMIUM = "/usr/lib/chromium/chromium"  # Debian's binary (/usr/bin/chromium wraps it)


def chromium() -> str:
    """Debian's Chromium, which the browser tests drive; missing, they fail (never skip)."""
    if not os.access(CHROMIUM, os.X_OK):
        import pytest  # lazy: the benchmark imports this module without pytest's runner

        pytest.fail(
            f"Debian's Chromium is not installed at {CHROMIUM}: run `make browser` (it"
            " installs the chromium and chromium-driver packages), then the test again"
        )
    return CHROMIUM


def renderer(
    db: Database, web: WebServer, limits: RenderLimits | None = None, fetch_deadline: float = 4.0
) -> ChromiumRenderer:
    """Headless Chromium over the stand-in web: what a page's scripts ask for is fetched by
    the real polite, safe fetcher (smaller limits, scripts accepted), as in production."""
    sub = Limits(
        max_bytes=1024 * 1024, connect_timeout=2.0, read_timeout=2.0, deadline=fetch_deadline
    )
    scripts = fetcher(db, web, sub, accept=SUBRESOURCE_TYPES)
    return ChromiumRenderer(chromium(), scripts, limits=limits)


def research_deps(
    db: Database,
    web: WebServer,
    blobs: BlobStore,
    *,
    llm: Any = None,
    knowledge: KnowledgeStore | None = None,
    limits: Limits | None = None,
    settings: dict[str, str] | None = None,
    render: RenderLimits | None = None,
) -> tuple[Deps, InlineTransport]:
    """A research function's deps over the stand-in web; ``render`` adds a Chromium renderer
    with those limits (else none: pages that need a browser are recorded, not rendered)."""
    transport = InlineTransport()
    env = {"COLONY_RESEARCH_WEB": web.research_setting(), **(settings or {})}
    deps = local_deps(
        Settings.from_env(env),
        db,
        transport,
        llm,
        knowledge or KnowledgeStore(db, OfflineHashEmbedder()),
        blobs=blobs,
        web=fetcher(db, web, limits),
        renderer=renderer(db, web, render) if render is not None else None,
    )
    return deps, transport


_RAN: dict[int, set[str]] = {}  # per transport: the task names already run


def drain(
    deps: Deps, transport: InlineTransport, *, sleep: Callable[[float], None] | None = None
) -> list[dict[str, Any]]:
    """Run every research task the transport holds that has not run (and those they
    schedule), in the order scheduled; each task's answer. A task scheduled for later runs
    when its turn comes: the fetcher's own pace answers ``wait`` until the site is free, and
    the runner waits short pauses itself."""
    answers: list[dict[str, Any]] = []
    done = _RAN.setdefault(id(transport), set())
    while pending := [
        n for n, t in transport.tasks.items() if n not in done and t.queue == RESEARCH_QUEUE
    ]:
        name = pending[0]
        done.add(name)
        task = ResearchTask.model_validate(json.loads(transport.tasks[name].body))
        options = {"sleep": sleep} if sleep else {}
        answers.append(runner.run(deps, task.org_id, task.domain, task.pass_no, **options))
    return answers
