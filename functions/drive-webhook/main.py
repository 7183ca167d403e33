"""Drive push notifications for the Meet Notes folder: transcript → GCS → ENT-006 → AGT-006.

Authenticated by the watch channel's token (X-Goog-Channel-Token), which also names the org.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from colony.runtime.compose.assets import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, http_json

if TYPE_CHECKING:
    from colony.ports import DriveClient

_drive: DriveClient | None = None


@functions_framework.http
@http_json
def handle(request: JsonRequest) -> dict[str, Any]:
    # lazy: the Drive client (httpx) and the flow load on the first request
    from colony.adapters.drive import drive_from_settings
    from colony.flows.recordings.drive import ingest

    global _drive
    d = deps(parts)
    if _drive is None:
        _drive = drive_from_settings(d.settings)
    return ingest(d, request.headers, _drive)
