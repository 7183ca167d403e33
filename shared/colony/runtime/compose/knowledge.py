"""The Knowledge Core alone (it embeds, but calls no chat model)."""

from __future__ import annotations

from colony.runtime.deps import Parts


def parts() -> Parts:
    # lazy: builders (adapters, SDKs) load on the first request, not at cold start
    from colony.runtime.knowledge_core import knowledge_from_settings

    return Parts(knowledge=knowledge_from_settings)
