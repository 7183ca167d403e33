"""Drive push notifications for the Meet Notes folder: transcript → GCS → ENT-006 → AGT-006.

Authenticated by the watch channel's token (X-Goog-Channel-Token), which also names the org.
"""

import functions_framework

from colony.runtime.deps import deps
from colony.runtime.edge import http_json

_drive = None


@functions_framework.http
@http_json
def handle(request):
    from colony.adapters.drive import drive_from_settings
    from colony.flows.recording import ingest

    global _drive
    d = deps()
    if _drive is None:
        _drive = drive_from_settings(d.settings)
    return ingest(d, request.headers, _drive)
