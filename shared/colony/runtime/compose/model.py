"""A model agent's parts: the chat model (tracing, call records) and the Knowledge Core."""

from __future__ import annotations

from colony.runtime.deps import Parts


def parts() -> Parts:
    # lazy: builders (adapters, SDKs) load on the first request, not at cold start
    from colony.llm.agent_call import llm_from_settings
    from colony.runtime.knowledge_core import knowledge_from_settings

    return Parts(llm=llm_from_settings, knowledge=knowledge_from_settings)
