"""A local stand-in for Google Drive v3, speaking its REST shapes (``colony.testing.wire``).

Routes: ``GET /drive/v3/files`` (``q="'<folder>' in parents and trashed = false"``,
``pageSize``/``pageToken`` pagination, ``fields`` accepted), ``GET /drive/v3/files/{id}/export
?mimeType=text/plain`` (Google Docs) and ``GET /drive/v3/files/{id}?alt=media`` (uploads).
Watch channels: ``POST /drive/v3/files/{id}/watch`` (a ``web_hook`` channel: ``id``,
``address``, ``token``, ``expiration`` in ms, capped at ``MAX_CHANNEL_SECONDS`` from now, as
Drive caps file channels at a day) and ``POST /drive/v3/channels/stop`` (``id`` +
``resourceId``; 404 for a channel it does not know). ``channels`` holds them, ``expire`` ends
one early, and ``live_channels`` lists those neither stopped nor past their expiration.
Every call needs ``Authorization: Bearer ...`` (401 otherwise, in Drive's error shape);
``rate_limit`` scripts 429s with ``Retry-After``.

``push_headers`` builds the headers Drive sends to a watch channel's address, so tests and
the demo can deliver notifications the way Drive does (an empty POST).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route

GOOGLE_DOC = "application/vnd.google-apps.document"
_PARENT = re.compile(r"'([^']+)' in parents")
MAX_CHANNEL_SECONDS = 86_400


@dataclass
class Channel:
    id: str
    resource_id: str
    folder: str
    address: str
    token: str
    expiration_ms: int
    stopped: bool = False


@dataclass
class _File:
    id: str
    name: str
    mime_type: str
    folder: str
    content: bytes
    trashed: bool = False


def drive_error(status: int, reason: str, message: str) -> Reply:
    errors = [{"domain": "global", "reason": reason, "message": message}]
    body = {"error": {"code": status, "message": message, "errors": errors}}
    return Reply(status, body)


class DriveServer(ProviderServer):
    """Drive v3 on 127.0.0.1; add files with ``add_file``; use as a context manager."""

    unauthorised = ("authError", "Request is missing required authentication")
    rate_limited = ("rateLimitExceeded", "Rate Limit Exceeded")

    def __init__(self, page_size_cap: int = 100) -> None:
        self._files: dict[str, _File] = {}
        self._cap = page_size_cap
        self.channels: dict[str, Channel] = {}
        super().__init__(
            routes=[
                Route.of("drive.channels.stop", "POST", r"/drive/v3/channels/stop", self._stop),
                Route.of(
                    "drive.files.watch",
                    "POST",
                    r"/drive/v3/files/(?P<id>[^/]+)/watch",
                    self._watch,
                ),
                Route.of(
                    "drive.files.export",
                    "GET",
                    r"/drive/v3/files/(?P<id>[^/]+)/export",
                    self._export,
                ),
                Route.of("drive.files.get", "GET", r"/drive/v3/files/(?P<id>[^/]+)", self._get),
                Route.of("drive.files.list", "GET", r"/drive/v3/files", self._list),
            ]
        )

    def add_file(
        self, folder: str, file_id: str, name: str, content: bytes, mime_type: str = GOOGLE_DOC
    ) -> None:
        self._files[file_id] = _File(file_id, name, mime_type, folder, content)

    def trash(self, file_id: str) -> None:
        self._files[file_id].trashed = True

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        return drive_error(status, code, message)

    def expire(self, channel_id: str) -> None:
        self.channels[channel_id].expiration_ms = int(time.time() * 1000) - 1

    def live_channels(self) -> list[Channel]:
        now = int(time.time() * 1000)
        return [c for c in self.channels.values() if not c.stopped and c.expiration_ms > now]

    def _watch(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        body = request.body if isinstance(request.body, dict) else {}
        channel_id, address = body.get("id"), body.get("address")
        if not isinstance(channel_id, str) or not channel_id or body.get("type") != "web_hook":
            return drive_error(400, "required", "Required parameter: id / type=web_hook")
        if not isinstance(address, str) or not address.startswith(("https://", "http://")):
            return drive_error(400, "push.webhookUrlNotHttps", "WebHook callback must be HTTPS")
        if channel_id in self.channels:
            return drive_error(400, "channelIdNotUnique", "Channel id not unique")
        folder = request.params["id"]
        now = int(time.time() * 1000)
        cap = now + MAX_CHANNEL_SECONDS * 1000
        asked = str(body.get("expiration") or "")
        expiration = min(int(asked), cap) if asked.isdigit() else now + 3_600_000
        channel = Channel(
            channel_id, f"res-{folder}", folder, address, str(body.get("token") or ""), expiration
        )
        self.channels[channel_id] = channel
        return Reply(
            200,
            {
                "kind": "api#channel",
                "id": channel_id,
                "resourceId": channel.resource_id,
                "resourceUri": f"https://www.googleapis.com/drive/v3/files/{folder}?alt=json",
                "token": channel.token,
                "expiration": str(expiration),
            },
        )

    def _stop(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        body = request.body if isinstance(request.body, dict) else {}
        channel = self.channels.get(str(body.get("id") or ""))
        if channel is None or channel.resource_id != body.get("resourceId"):
            return drive_error(404, "notFound", "Channel not found")
        channel.stopped = True
        return Reply(204, b"")

    # -- routes ---------------------------------------------------------------------------

    def _list(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        query = (request.query.get("q") or [""])[0]
        match = _PARENT.search(query)
        if not match:
            return drive_error(400, "invalid", "Invalid Value: q")
        files = [f for f in self._files.values() if f.folder == match.group(1)]
        if "trashed = false" in query:
            files = [f for f in files if not f.trashed]
        size = min(int((request.query.get("pageSize") or ["100"])[0]), self._cap)
        start = int((request.query.get("pageToken") or ["0"])[0])
        page = files[start : start + size]
        body: dict[str, Any] = {
            "kind": "drive#fileList",
            "incompleteSearch": False,
            "files": [
                {
                    "kind": "drive#file",
                    "id": f.id,
                    "name": f.name,
                    "mimeType": f.mime_type,
                    "modifiedTime": "2026-11-19T19:48:00.000Z",
                }
                for f in page
            ],
        }
        if start + size < len(files):
            body["nextPageToken"] = str(start + size)
        return Reply(200, body)

    def _file(self, request: RecordedRequest) -> _File | Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        found = self._files.get(request.params["id"])
        if found is None:
            return drive_error(404, "notFound", f"File not found: {request.params['id']}.")
        return found

    def _export(self, request: RecordedRequest) -> Reply:
        found = self._file(request)
        if isinstance(found, Reply):
            return found
        if found.mime_type != GOOGLE_DOC:
            return drive_error(403, "fileNotExportable", "Only Google Docs can be exported")
        if (request.query.get("mimeType") or [""])[0] != "text/plain":
            return drive_error(400, "badRequest", "Export only supports text/plain here")
        return Reply(200, found.content, {"Content-Type": "text/plain; charset=utf-8"})

    def _get(self, request: RecordedRequest) -> Reply:
        found = self._file(request)
        if isinstance(found, Reply):
            return found
        if (request.query.get("alt") or [""])[0] != "media":
            return Reply(
                200,
                {
                    "kind": "drive#file",
                    "id": found.id,
                    "name": found.name,
                    "mimeType": found.mime_type,
                },
            )
        if found.mime_type == GOOGLE_DOC:
            return drive_error(403, "fileNotDownloadable", "Use Export with Docs Editors files")
        return Reply(200, found.content, {"Content-Type": found.mime_type})


def push_headers(
    *,
    channel_id: str,
    token: str,
    message_number: int,
    folder_id: str,
    state: str = "update",
    changed: str = "children",
) -> dict[str, str]:
    """The headers of one Drive push notification to a ``files.watch`` channel."""
    headers = {
        "X-Goog-Channel-ID": channel_id,
        "X-Goog-Channel-Token": token,
        "X-Goog-Channel-Expiration": "Tue, 01 Dec 2026 09:00:00 GMT",
        "X-Goog-Message-Number": str(message_number),
        "X-Goog-Resource-ID": f"res-{folder_id}",
        "X-Goog-Resource-URI": (
            f"https://www.googleapis.com/drive/v3/files/{folder_id}?alt=json&supportsAllDrives=true"
        ),
        "X-Goog-Resource-State": state,
    }
    if state != "sync":
        headers["X-Goog-Changed"] = changed
    return headers
