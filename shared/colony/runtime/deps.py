"""The composition root: everything a flow needs, built once per function instance.

Parts are built lazily (imports inside ``build_deps``) so a cold start loads only what the
function uses; ``deps()`` reads the settings from the environment on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING

from colony.runtime.edge import DbRejections, RejectionRecorder
from colony.runtime.faults import Faults

if TYPE_CHECKING:
    from colony.knowledge import KnowledgeStore
    from colony.llm.agent_call import LlmDeps
    from colony.ports import BlobStore, Transport
    from colony.settings import Settings
    from colony.store import Database


Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Deps:
    """Everything a flow needs, built once per function instance."""

    settings: Settings
    db: Database  # the application role
    transport: Transport
    llm: LlmDeps
    knowledge: KnowledgeStore
    rejections: RejectionRecorder
    clock: Clock = utc_now
    faults: Faults = field(default_factory=Faults.from_env)  # crash injection, tests only
    blob_store: BlobStore | None = None  # None: built from the settings on first use

    @cached_property
    def blobs(self) -> BlobStore:
        """The assets bucket; built on first use so functions that never touch GCS never
        import its SDK."""
        if self.blob_store is not None:
            return self.blob_store
        from colony.adapters.storage import blob_store_from_settings

        return blob_store_from_settings(self.settings)


def build_deps(
    settings: Settings,
    *,
    db: Database | None = None,
    transport: Transport | None = None,
    llm: LlmDeps | None = None,
    knowledge: KnowledgeStore | None = None,
    rejections: RejectionRecorder | None = None,
    clock: Clock | None = None,
    blobs: BlobStore | None = None,
) -> Deps:
    """Build the parts not given. Imports live here so a cold start loads only what it uses."""
    if db is None:
        from colony.store import Database, connect_factory

        # AGT-006 keeps one connection per pass-1 worker busy; other functions use fewer.
        db = Database(
            connect_factory(settings, "app"), pool_size=settings.recording_parallelism + 2
        )
    if transport is None:
        from colony.adapters.transport import transport_from_settings

        transport = transport_from_settings(settings, db=db)
    if llm is None:
        from colony.llm.agent_call import llm_from_settings

        llm = llm_from_settings(settings, db)
    if knowledge is None:
        from colony.adapters.embedding import embedder_from_settings
        from colony.knowledge import KnowledgeStore

        knowledge = KnowledgeStore(db, embedder_from_settings(settings))
    return Deps(
        settings=settings,
        db=db,
        transport=transport,
        llm=llm,
        knowledge=knowledge,
        rejections=rejections if rejections is not None else DbRejections(db),
        clock=clock or utc_now,
        blob_store=blobs,
    )


_deps: Deps | None = None
_deps_lock = threading.Lock()


def deps() -> Deps:
    """This process's ``Deps``: settings from the environment, built on first use, once."""
    global _deps
    current = _deps
    if current is None:
        with _deps_lock:
            if _deps is None:
                from colony.observability.sentry import init_sentry
                from colony.settings import Settings

                settings = Settings.from_env()
                init_sentry(settings)
                _deps = build_deps(settings)
            current = _deps
    return current


def set_deps_for_tests(value: Deps | None) -> None:
    """Install ``value`` as this process's ``Deps`` (None: build from the environment again)."""
    global _deps
    with _deps_lock:
        _deps = value
