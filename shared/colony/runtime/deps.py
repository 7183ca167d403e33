"""The composition root: everything a flow needs, built once per function instance.

The database and the transport are built with the rest; the model client (``llm``), the
Knowledge Core (``knowledge``, which holds the embedder) and the assets bucket (``blobs``) are
built on their first use, by the builders of the function's ``Parts``. A function's
``main.py`` names its parts (``colony.runtime.compose``), so only the functions composed with
a model reach a provider SDK, in their imports and so in their bundles, and need its key (the
key is checked where the provider is built, naming the variable). Using a part a function was
not composed with is a ``ConfigError`` naming it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from colony.errors import ConfigError
from colony.observability.sentry import init_sentry
from colony.registry.functions import pool_size
from colony.runtime.faults import Faults

if TYPE_CHECKING:
    from colony.flows.deps import Applier
    from colony.knowledge import KnowledgeStore
    from colony.llm.agent_call import LlmDeps
    from colony.ports import (
        BlobStore,
        Clock,
        MailboxApis,
        PageRenderer,
        ReceivedMail,
        RejectionRecorder,
        SecretStore,
        Sender,
        Transport,
        WebFetcher,
    )
    from colony.settings import Settings
    from colony.store import Database


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Parts:
    """Builders of the parts a function uses beyond its database and transport, each called
    on first use; None: the function does not use that part."""

    llm: Callable[[Settings, Database], LlmDeps] | None = None
    knowledge: Callable[[Settings, Database], KnowledgeStore] | None = None
    blobs: Callable[[Settings], BlobStore] | None = None
    sender: Callable[[Settings], Sender] | None = None
    # per-org credentials (the send function: each org's DKIM keys)
    secrets: Callable[[Settings], SecretStore] | None = None
    # the Gmail and Graph APIs an org's own mailboxes send through (issue 39 item 2)
    mailbox_apis: Callable[[Settings], MailboxApis] | None = None
    # None from the builder: the deployment has no reader of received mail (its inbound
    # events are then held: colony.flows.outbound.held_mail)
    inbound: Callable[[Settings], ReceivedMail | None] | None = None
    web: Callable[[Settings, Database], WebFetcher] | None = None  # the research function's
    # None from the builder: no browser here (pages that need one are recorded, not rendered)
    renderer: Callable[[Settings, Database], PageRenderer | None] | None = None
    # What approving an item of each kind does (colony.runtime.appliers), for the functions
    # that decide items: naming it brings every capability's applier into the bundle.
    appliers: Callable[[str], Applier | None] | None = None


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
    mail_sender: Sender | None = None
    secret_store: SecretStore | None = None
    mailbox_api_table: MailboxApis | None = None
    inbound_mail: ReceivedMail | None = None
    web_fetcher: WebFetcher | None = None
    page_renderer: PageRenderer | None = None
    applier_table: Callable[[str], Applier | None] | None = None
    parts: Parts | None = None  # None: not composed yet (``deps(parts)`` composes it)

    def _builder(self, part: str) -> Any:
        builder = getattr(self.parts, part) if self.parts is not None else None
        if builder is None:
            raise ConfigError(
                f"this function is not composed with {part!r}: name it in the parts its"
                " main.py passes to deps() (colony.runtime.compose)"
            )
        return builder

    @cached_property
    def llm(self) -> LlmDeps:
        """The chat model with its budgets, tracing and call records; built on first use so
        model-free functions never import a provider SDK or need its key."""
        if self.llm_deps is not None:
            return self.llm_deps
        return self._builder("llm")(self.settings, self.db)

    @cached_property
    def knowledge(self) -> KnowledgeStore:
        """The Knowledge Core over the configured embedder; built on first use (the embedder
        is a provider client too)."""
        if self.knowledge_store is not None:
            return self.knowledge_store
        return self._builder("knowledge")(self.settings, self.db)

    @cached_property
    def blobs(self) -> BlobStore:
        """The assets bucket; built on first use so functions that never touch GCS never
        import its SDK."""
        if self.blob_store is not None:
            return self.blob_store
        return self._builder("blobs")(self.settings)

    @cached_property
    def sender(self) -> Sender:
        """The mail relay (SMTP); built on first use, by the send function only."""
        if self.mail_sender is not None:
            return self.mail_sender
        return self._builder("sender")(self.settings)

    @cached_property
    def secrets(self) -> SecretStore:
        """Per-org credentials (Secret Manager); built on first use, by the functions that
        read them in a flow (send: the DKIM key of the org's sending domain)."""
        if self.secret_store is not None:
            return self.secret_store
        return self._builder("secrets")(self.settings)

    @cached_property
    def mailbox_apis(self) -> MailboxApis:
        """The Gmail and Graph APIs, by mailbox kind (those whose app is configured); built
        on first use, by the functions that send or connect mailboxes."""
        if self.mailbox_api_table is not None:
            return self.mailbox_api_table
        return self._builder("mailbox_apis")(self.settings)

    @cached_property
    def web(self) -> WebFetcher:
        """The open web, politely and safely (research only); built on first use."""
        if self.web_fetcher is not None:
            return self.web_fetcher
        return self._builder("web")(self.settings, self.db)

    @cached_property
    def renderer(self) -> PageRenderer | None:
        """A browser for pages that need one to show their text (research only); None where
        none is configured (``COLONY_RESEARCH_BROWSER``) or composed, which is an answer:
        such a page is kept as fetched and marked ``needs_browser``."""
        if self.page_renderer is not None:
            return self.page_renderer
        builder = self.parts.renderer if self.parts is not None else None
        return builder(self.settings, self.db) if builder is not None else None

    def applier(self, kind: str) -> Applier | None:
        """What approving an item of ``kind`` does (``colony.runtime.appliers``); only a
        function composed with the appliers may decide items."""
        table = self.applier_table or self._builder("appliers")
        return table(kind)

    @cached_property
    def inbound(self) -> ReceivedMail | None:
        """The provider's store of received mail (replies its inbound webhook names); None
        when the deployment configured none, which is an answer, not an error: the events
        that name such mail are held until it is configured."""
        if self.inbound_mail is not None:
            return self.inbound_mail
        return self._builder("inbound")(self.settings)


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
    sender: Sender | None = None,
    secrets: SecretStore | None = None,
    mailbox_apis: MailboxApis | None = None,
    inbound: ReceivedMail | None = None,
    web: WebFetcher | None = None,
    renderer: PageRenderer | None = None,
    appliers: Callable[[str], Applier | None] | None = None,
    parts: Parts | None = None,
    faults: Faults | None = None,
) -> Deps:
    """Build the parts not given (the database, the configured transport, the rejection
    recorder); ``llm``, ``knowledge`` and ``blobs`` are built later, on first use (see
    ``Deps``), by builders the function's parts import on its first request. ``faults``
    (tests) replaces the ones ``COLONY_INJECT_FAULTS`` names."""
    # lazy: pg8000, the pool and the transport load when the first request builds them, not
    # at cold start
    from colony.adapters.transport import transport_from_settings
    from colony.store import Database, connect_factory
    from colony.store.rejections import DbRejections

    if db is None:
        # Bounded by what this function runs at once (its concurrency; AGT-006's workers too).
        size = pool_size(settings.function_name, settings.recording_parallelism)
        db = Database(connect_factory(settings, "app"), pool_size=size)
    if transport is None:
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
        mail_sender=sender,
        secret_store=secrets,
        mailbox_api_table=mailbox_apis,
        inbound_mail=inbound,
        web_fetcher=web,
        page_renderer=renderer,
        applier_table=appliers,
        parts=parts,
        faults=faults if faults is not None else Faults.from_env(),
    )


_deps: Deps | None = None
_deps_lock = threading.Lock()


def deps(parts: Callable[[], Parts] | None = None) -> Deps:
    """This process's ``Deps``: settings from the environment, built on first use, once.

    ``parts`` is the function's composition (``colony.runtime.compose``), called once; a
    ``Deps`` first built without it (the edge recording a rejected delivery) is composed on
    the first call that names it."""
    global _deps
    current = _deps
    if current is None or (parts is not None and current.parts is None):
        with _deps_lock:
            if _deps is None:
                # lazy: settings (and Secret Manager) are read on the first request
                from colony.settings import Settings

                settings = Settings.from_env()
                init_sentry(settings)
                _deps = build_deps(settings, parts=parts() if parts is not None else None)
            elif parts is not None and _deps.parts is None:
                _deps = dataclasses.replace(_deps, parts=parts())
            current = _deps
    return current


def set_deps_for_tests(value: Deps | None) -> None:
    """Install ``value`` as this process's ``Deps`` (None: build from the environment again)."""
    global _deps
    with _deps_lock:
        _deps = value
