"""What flows need from the composition root (``colony.runtime.deps.Deps`` provides it).

The knowledge and LLM types are imported for the type checker only: the model-free webhook
flows (``flows.recordings.drive``, ``flows.knowledge.notion_webhook``) import this module, and a
function's bundle holds every package its imports reach (``colony.deploy.imports``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from colony.runtime.faults import Faults
from colony.settings import Settings
from colony.store import Database

if TYPE_CHECKING:
    from colony.knowledge import KnowledgeStore
    from colony.llm.agent_call import LlmDeps
    from colony.ports import (
        BlobStore,
        Clock,
        MailboxApis,
        PageRenderer,
        ReceivedMail,
        SecretStore,
        Sender,
        Transport,
        WebFetcher,
    )


class FlowDeps(Protocol):
    """What a flow is handed by its function's composition root."""

    @property
    def settings(self) -> Settings: ...
    @property
    def db(self) -> Database: ...
    @property
    def transport(self) -> Transport: ...
    @property
    def llm(self) -> LlmDeps: ...
    @property
    def knowledge(self) -> KnowledgeStore: ...
    @property
    def faults(self) -> Faults: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def blobs(self) -> BlobStore: ...
    @property
    def sender(self) -> Sender: ...
    @property
    def secrets(self) -> SecretStore: ...
    @property
    def mailbox_apis(self) -> MailboxApis: ...
    @property
    def inbound(self) -> ReceivedMail | None: ...
    @property
    def web(self) -> WebFetcher: ...
    @property
    def renderer(self) -> PageRenderer | None: ...

    def applier(self, kind: str) -> Applier | None:
        """What approving an item of ``kind`` does (None: nothing beyond the decision).
        Each capability owns the applier of the kinds it queues; the table that names them
        is the composition's (``colony.runtime.appliers``), so deciding an item
        (``flows.approvals``) knows no capability that made it."""
        ...


# What applying an approved item does: (deps, the decision's cursor, org, item id, payload).
# It runs inside the decision's transaction (same cursor, same org) and must be idempotent.
Applier = Callable[[FlowDeps, Any, str, str, Mapping[str, Any]], None]
