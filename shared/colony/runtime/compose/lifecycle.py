"""The data-lifecycle function's parts: the assets bucket, the reader of received mail (the
reply poll drains the inbound events held while there was none:
``colony.flows.outbound.held_mail``), and the Langfuse project whose traces an erasure deletes
(built once per instance; None when tracing is off)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from colony.runtime.deps import Parts

if TYPE_CHECKING:
    from colony.ports import TraceArchive
    from colony.settings import Settings


def parts() -> Parts:
    # lazy: builders (adapters, SDKs) load on the first request, not at cold start
    from colony.adapters.storage import blob_store_from_settings
    from colony.runtime.compose.inbound import inbound

    return Parts(blobs=blob_store_from_settings, inbound=inbound)


_lock = threading.Lock()
_built: dict[str, TraceArchive | None] = {}


def traces(settings: Settings) -> TraceArchive | None:
    """This instance's ``TraceArchive``, built on the first erasure."""
    # lazy: httpx and the adapter, on the first erasure
    from colony.adapters.langfuse_traces import trace_archive_from_settings

    with _lock:
        if "archive" not in _built:
            _built["archive"] = trace_archive_from_settings(settings)
        return _built["archive"]
