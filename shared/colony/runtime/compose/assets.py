"""The assets bucket alone (a webhook that stores what it receives; no model)."""

from __future__ import annotations

from colony.runtime.deps import Parts


def parts() -> Parts:
    from colony.adapters.storage import blob_store_from_settings

    return Parts(blobs=blob_store_from_settings)
