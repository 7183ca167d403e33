"""The assets bucket alone (a webhook that stores what it receives; no model)."""

from __future__ import annotations

from colony.runtime.deps import Parts


def parts() -> Parts:
    # lazy: builders (adapters, SDKs) load on the first request, not at cold start
    from colony.adapters.storage import blob_store_from_settings

    return Parts(blobs=blob_store_from_settings)
