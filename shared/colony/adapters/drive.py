"""Google Drive v3: the Gemini Meet Notes folder's files and their transcripts.

``DriveClient`` is the port the recording webhook sees; ``HttpDrive`` speaks Drive v3's REST
shapes (``files.list`` with ``q``/``fields``/``pageToken``, ``files.export`` for Google Docs,
``files.get?alt=media`` for uploaded text), and ``DriveChannels``' ``files.watch`` /
``channels.stop``, against ``https://www.googleapis.com`` or a local
stand-in (``colony.testing.drive_server``).

What a watch-channel notification means and whether it is genuine is ``colony.webhooks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from colony.adapters.rest import RestClient
from colony.errors import NotFound
from colony.ports import DriveFile, WatchChannel
from colony.settings import Settings
from colony.webhooks import GOOGLE_DOC

DRIVE_SCOPE = "https://www.googleapis.com/auth/drive.readonly"


class HttpDrive:
    """``colony.ports.DriveClient`` over Drive v3 REST."""

    def __init__(self, rest: RestClient) -> None:
        self._rest = rest

    def list_folder(self, folder_id: str) -> Iterator[DriveFile]:
        page: str | None = None
        while True:
            params = {
                "q": f"'{folder_id}' in parents and trashed = false",
                "fields": "nextPageToken,files(id,name,mimeType,modifiedTime)",
                "orderBy": "createdTime",
                "pageSize": 100,
                "supportsAllDrives": "true",
                "includeItemsFromAllDrives": "true",
            }
            if page:
                params["pageToken"] = page
            body = self._rest.send("GET", "/drive/v3/files", params=params).json()
            for item in body.get("files") or []:
                yield DriveFile(
                    str(item["id"]),
                    str(item.get("name") or item["id"]),
                    str(item.get("mimeType") or ""),
                    item.get("modifiedTime"),
                )
            page = body.get("nextPageToken")
            if not page:
                return

    def download_text(self, file: DriveFile, max_bytes: int) -> bytes:
        if file.mime_type == GOOGLE_DOC:
            response = self._rest.send(
                "GET",
                f"/drive/v3/files/{file.id}/export",
                params={"mimeType": "text/plain"},
                max_bytes=max_bytes,
            )
        else:
            response = self._rest.send(
                "GET",
                f"/drive/v3/files/{file.id}",
                params={"alt": "media", "supportsAllDrives": "true"},
                max_bytes=max_bytes,
            )
        return response.content

    def watch_folder(
        self, folder_id: str, channel_id: str, address: str, token: str, expiration_ms: int
    ) -> WatchChannel:
        body = {
            "id": channel_id,
            "type": "web_hook",
            "address": address,
            "token": token,
            "expiration": str(expiration_ms),
        }
        answer = self._rest.send(
            "POST",
            f"/drive/v3/files/{folder_id}/watch",
            params={"supportsAllDrives": "true"},
            json=body,
        ).json()
        return WatchChannel(
            str(answer["id"]), str(answer["resourceId"]), int(answer.get("expiration") or 0)
        )

    def stop_channel(self, channel_id: str, resource_id: str) -> None:
        try:
            self._rest.send(
                "POST",
                "/drive/v3/channels/stop",
                json={"id": channel_id, "resourceId": resource_id},
            )
        except NotFound:
            return  # expired or already stopped: nothing left to stop

    def close(self) -> None:
        self._rest.close()


def drive_from_settings(
    settings: Settings, *, sleep: Callable[[float], None] | None = None
) -> HttpDrive:
    """Production: Google credentials with the read-only Drive scope. Locally, with
    ``COLONY_DRIVE_BASE_URL`` pointing at a stand-in, a fixed local token."""
    if settings.drive_base_url:
        base, token = settings.drive_base_url, _static("local-drive-token")
    else:
        base, token = "https://www.googleapis.com", _google_token()
    extra = {"sleep": sleep} if sleep else {}
    return HttpDrive(RestClient("Drive", base, token, **extra))  # type: ignore[arg-type]


def _static(value: str) -> Callable[[], str]:
    return lambda: value


def _google_token() -> Callable[[], str]:
    """A token source over Application Default Credentials, found on the first call (a
    function that never calls Drive, e.g. an erasure of an org with no channel, needs none)."""
    state: dict[str, Any] = {}

    def token() -> str:
        if not state:
            # lazy: google-auth, loaded for the first Drive token
            import google.auth
            import google.auth.transport.requests

            state["credentials"], _ = google.auth.default(scopes=[DRIVE_SCOPE])
            state["request"] = google.auth.transport.requests.Request()
        credentials = state["credentials"]
        if not credentials.valid:
            credentials.refresh(state["request"])
        return str(credentials.token)

    return token
