"""What flows need from the composition root (``colony.runtime.deps.Deps`` provides it).

The knowledge and LLM types are imported for the type checker only: the model-free webhook
flows (``flows.drive``, ``flows.notion_webhook``) import this module, and a function's bundle
holds every package its imports reach (``colony.deploy.imports``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from colony.ports import BlobStore, Clock, ReceivedMail, Sender, Transport
from colony.runtime.faults import Faults
from colony.settings import Settings
from colony.store import Database

if TYPE_CHECKING:
    from colony.knowledge import KnowledgeStore
    from colony.llm.agent_call import LlmDeps


class FlowDeps(Protocol):
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
    def inbound(self) -> ReceivedMail | None: ...
