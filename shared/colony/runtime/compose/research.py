"""The research function's parts: the open web (politely and safely), the assets bucket its
pages are kept in, the Knowledge Core's embedder for their passages, and a browser for the
pages that need one where ``COLONY_RESEARCH_BROWSER`` names it (deployed, the research
function is a Cloud Run service whose image carries Chromium: terraform/browser.tf). No chat
model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.runtime.deps import Parts

if TYPE_CHECKING:
    from colony.ports.render import PageRenderer
    from colony.settings import Settings
    from colony.store.db import Database


def renderer(settings: Settings, db: Database) -> PageRenderer | None:
    """Chromium where ``COLONY_RESEARCH_BROWSER`` names it, else None (a page that needs a
    browser is kept as fetched). The deployed function has no browser, so it never loads
    the browser's adapter (DevTools, its page sessions)."""
    if settings.research_browser is None:
        return None
    # lazy: the browser's adapter loads only where a browser is configured (the job)
    from colony.adapters.chromium import renderer_from_settings

    return renderer_from_settings(settings, db)


def parts() -> Parts:
    # lazy: builders (adapters, SDKs) load on the first request, not at cold start
    from colony.adapters.polite_web import web_from_settings
    from colony.adapters.storage import blob_store_from_settings
    from colony.runtime.knowledge_core import knowledge_from_settings

    return Parts(
        knowledge=knowledge_from_settings,
        blobs=blob_store_from_settings,
        web=web_from_settings,
        renderer=renderer,
    )
