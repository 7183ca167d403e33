"""The Knowledge Core part of a function's composition: the store over the configured
embedder (``colony.runtime.deps.Parts.knowledge``). A module of its own so that only the
functions composed with it carry the embedding SDKs in their bundles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.adapters.embedding import embedder_from_settings
from colony.knowledge import KnowledgeStore

if TYPE_CHECKING:
    from colony.settings import Settings
    from colony.store import Database


def knowledge_from_settings(settings: Settings, db: Database) -> KnowledgeStore:
    """The Knowledge Core over ``db`` with the embedder ``settings`` name."""
    return KnowledgeStore(db, embedder_from_settings(settings))
