"""The composition root: everything a flow needs, built once per function instance.

Parts are built lazily (imports inside ``build_deps``) so a cold start loads only what the
function uses; ``deps()`` reads the settings from the environment on first use. The model
client (``llm``), the Knowledge Core (``knowledge``, which holds the embedder) and the assets
bucket (``blobs``) are built on their first use, not with the rest: a webhook that never calls
a model neither imports a provider SDK nor needs a provider key (the key is checked where the
provider is built, so a model function without one fails there, naming the variable).
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
    rejections: RejectionRecorder
    clock: Clock = utc_now
    faults: Faults = field(default_factory=Faults.from_env)  # crash injection, tests only
    # Given parts (tests); None: built from the settings on first use.
    llm_deps: LlmDeps | None = None
    knowledge_store: KnowledgeStore | None = None
    blob_store: BlobStore | None = None

    @cached_property
    def llm(self) -> LlmDeps:
        """The chat model with its budgets, tracing and call records; built on first use so
        model-free functions never import a provider SDK or need its key."""
        if self.llm_deps is not None:
            return self.llm_deps
        from colony.llm.agent_call import llm_from_settings

        return llm_from_settings(self.settings, self.db)

    @cached_property
    def knowledge(self) -> KnowledgeStore:
        """The Knowledge Core over the configured embedder; built on first use (the embedder
        is a provider client too)."""
        if self.knowledge_store is not None:
            return self.knowledge_store
        from colony.adapters.embedding import embedder_from_settings
        from colony.knowledge import KnowledgeStore

        return KnowledgeStore(self.db, embedder_from_settings(self.settings))

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
    """Build the parts not given. Imports live here so a cold start loads only what it uses;
    ``llm``, ``knowledge`` and ``blobs`` are built later, on first use (see ``Deps``)."""
    if db is None:
        from colony.registry.functions import pool_size
        from colony.store import Database, connect_factory

        # Bounded by what this function runs at once (its concurrency; AGT-006's workers too).
        size = pool_size(settings.function_name, settings.recording_parallelism)
        db = Database(connect_factory(settings, "app"), pool_size=size)
    if transport is None:
        from colony.adapters.transport import transport_from_settings

        transport = transport_from_settings(settings, db=db)
    return Deps(
        settings=settings,
        db=db,
        transport=transport,
        rejections=rejections if rejections is not None else DbRejections(db),
        clock=clock or utc_now,
        llm_deps=llm,
        knowledge_store=knowledge,
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
