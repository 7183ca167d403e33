"""Google Drive v3: the Gemini Meet Notes folder's files and their transcripts.

``DriveClient`` is the port the recording webhook sees; ``HttpDrive`` speaks Drive v3's REST
shapes (``files.list`` with ``q``/``fields``/``pageToken``, ``files.export`` for Google Docs,
``files.get?alt=media`` for uploaded text), against ``https://www.googleapis.com`` or a local
stand-in (``colony.testing.drive_server``).

What a watch-channel notification means and whether it is genuine is ``colony.webhooks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from colony.adapters.rest import RestClient
from colony.ports import DriveFile
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
    # lazy: google-auth, loaded for the first Drive token
    import google.auth
    import google.auth.transport.requests

    credentials, _ = google.auth.default(scopes=[DRIVE_SCOPE])
    request = google.auth.transport.requests.Request()

    def token() -> str:
        if not credentials.valid:
            credentials.refresh(request)
        return str(credentials.token)

    return token
