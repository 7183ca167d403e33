"""The chat function's parts: the chat model, the Knowledge Core, the assets bucket (kit
links on its cards) and what approving each kind of item does (people decide on /overview).

Unlike the other compositions, whose first request uses every part they name, the chat
function's first request is its page and the views it loads (the queue, the brief, the
funnels), which use the bucket alone: so the model stack, the Knowledge Core and the appliers
(every capability that queues items) load when a turn or a decision first builds them, not
when the page composes the function (issue 32 item 4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.runtime.deps import Parts

if TYPE_CHECKING:
    from colony.flows.deps import Applier
    from colony.knowledge import KnowledgeStore
    from colony.llm.agent_call import LlmDeps
    from colony.settings import Settings
    from colony.store import Database


def llm(settings: Settings, db: Database) -> LlmDeps:
    # lazy: the model stack (assembly, tracing, the provider's SDK) loads with the first turn
    from colony.llm.agent_call import llm_from_settings

    return llm_from_settings(settings, db)


def knowledge(settings: Settings, db: Database) -> KnowledgeStore:
    # lazy: the Knowledge Core and its embedder load with the first turn that retrieves
    from colony.runtime.knowledge_core import knowledge_from_settings

    return knowledge_from_settings(settings, db)


def appliers(kind: str) -> Applier | None:
    # lazy: the appliers reach every capability that queues items; loaded with the first
    # decision (imports are cached, so later calls only look the kind up)
    from colony.runtime.appliers import applier

    return applier(kind)


def parts() -> Parts:
    # lazy: the bucket's builder (its SDK loads with the first signed link)
    from colony.adapters.storage import blob_store_from_settings

    return Parts(llm=llm, knowledge=knowledge, blobs=blob_store_from_settings, appliers=appliers)
