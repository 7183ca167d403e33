"""What flows need from the composition root (``colony.runtime.deps.Deps`` provides it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import LlmDeps
from colony.ports import BlobStore, Transport
from colony.runtime.faults import Faults
from colony.settings import Settings
from colony.store import Database


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
    def clock(self) -> Callable[[], datetime]: ...
    @property
    def blobs(self) -> BlobStore: ...
