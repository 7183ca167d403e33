"""Layer 1, the Knowledge Core: chunking, upsert by content hash, per-domain retrieval."""

from typing import TYPE_CHECKING

from colony.lazy import lazy_names

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.knowledge.chunking import chunk_blocks, chunk_text
    from colony.knowledge.store import ChunkIn, KnowledgeStore, Retrieved, SyncResult

# Loaded on first use (PEP 562): a flow that records an exemplar's outcome
# (``knowledge.outcomes``) or names an org's index (``knowledge.indexes``) does not load the
# store and the chunker with the package.
_HOMES = {
    "ChunkIn": "colony.knowledge.store",
    "KnowledgeStore": "colony.knowledge.store",
    "Retrieved": "colony.knowledge.store",
    "SyncResult": "colony.knowledge.store",
    "chunk_blocks": "colony.knowledge.chunking",
    "chunk_text": "colony.knowledge.chunking",
}

__all__ = ["ChunkIn", "KnowledgeStore", "Retrieved", "SyncResult", "chunk_blocks", "chunk_text"]


__getattr__ = lazy_names(__name__, _HOMES)
