"""Layer 1, the Knowledge Core: chunking, upsert by content hash, per-domain retrieval."""

from colony.knowledge.chunking import chunk_blocks, chunk_text
from colony.knowledge.store import ChunkIn, KnowledgeStore, Retrieved, SyncResult

__all__ = ["ChunkIn", "KnowledgeStore", "Retrieved", "SyncResult", "chunk_blocks", "chunk_text"]
