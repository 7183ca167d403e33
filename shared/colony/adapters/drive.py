"""Google Drive v3: the Gemini Meet Notes folder's files and their transcripts.

``DriveClient`` is the port the recording webhook sees; ``HttpDrive`` speaks Drive v3's REST
shapes (``files.list`` with ``q``/``fields``/``pageToken``, ``files.export`` for Google Docs,
``files.get?alt=media`` for uploaded text), against ``https://www.googleapis.com`` or a local
stand-in (``colony.testing.drive_server``).

Watch channels: each org's folder is watched with ``files.watch``; the channel's ``token``
(echoed by Drive as ``X-Goog-Channel-Token``) is ``<org id>.<HMAC-SHA256(secret, org id,
a line feed, folder id)>``. One configured secret authenticates every channel, names the
org, and binds the org to its own folder: the folder comes from ``X-Goog-Resource-URI``, an
unauthenticated header, so a token issued for org A's folder must never let a notification
naming org B's folder read B's transcripts into A.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from colony.adapters.rest import RestClient
from colony.errors import ConfigError, Unauthorized
from colony.settings import Settings

GOOGLE_DOC = "application/vnd.google-apps.document"
TEXT_TYPES = ("text/plain", "text/markdown", "text/vtt")
DRIVE_SCOPE = "https://www.googleapis.com/auth/drive.readonly"
MAX_TRANSCRIPT_BYTES = 4_000_000  # ~1M tokens: far past what AGT-006 accepts, so it can say so
_FOLDER_IN_URI = re.compile(r"/drive/v3/files/([A-Za-z0-9_-]{1,200})(?:[/?]|$)")


@dataclass(frozen=True, slots=True)
class DriveFile:
    id: str
    name: str
    mime_type: str
    modified_time: str | None = None


class DriveClient(Protocol):
    """The Drive calls the recording webhook makes."""

    def list_folder(self, folder_id: str) -> Iterator[DriveFile]:
        """Every non-trashed file directly in ``folder_id``, oldest first (all pages)."""
        ...

    def download_text(self, file: DriveFile, max_bytes: int) -> bytes:
        """The file's content as plain text bytes (Docs are exported); raises
        ``ResponseTooLarge`` past ``max_bytes``."""
        ...


class HttpDrive:
    """``DriveClient`` over Drive v3 REST."""

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


def is_transcript(file: DriveFile) -> bool:
    """Meet Notes are Google Docs; plain-text uploads are accepted too. Folders, videos and
    everything else in the folder are not transcripts."""
    return file.mime_type == GOOGLE_DOC or file.mime_type in TEXT_TYPES


def folder_of(resource_uri: str | None) -> str | None:
    """The watched folder id from ``X-Goog-Resource-URI`` (``.../drive/v3/files/<id>?...``)."""
    match = _FOLDER_IN_URI.search(resource_uri or "")
    return match.group(1) if match else None


def watch_token(secret: str, org_id: str, folder_id: str) -> str:
    """The ``token`` to set on the ``files.watch`` channel of ``org_id``'s ``folder_id``."""
    if not org_id or not folder_id or "\n" in org_id or "\n" in folder_id:
        raise ConfigError("a Drive watch token needs an org id and a folder id")
    message = f"{org_id}\n{folder_id}".encode()
    mac = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return f"{org_id}.{mac}"


def org_from_token(secret: str | None, token: str | None, folder_id: str | None) -> str:
    """The org a channel token was issued for, if it was issued for ``folder_id`` (the folder
    the notification names); ``Unauthorized`` unless it verifies (constant-time)."""
    if not secret:
        raise ConfigError("COLONY_DRIVE_CHANNEL_TOKEN is required to accept Drive notifications")
    org_id, dot, _ = (token or "").rpartition(".")
    if (
        not dot
        or not org_id
        or not folder_id
        or "\n" in org_id
        or not hmac.compare_digest(
            watch_token(secret, org_id, folder_id).encode(), (token or "").encode()
        )
    ):
        raise Unauthorized("the Drive channel token does not verify for this folder")
    return org_id


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
    import google.auth
    import google.auth.transport.requests

    credentials, _ = google.auth.default(scopes=[DRIVE_SCOPE])
    request = google.auth.transport.requests.Request()

    def token() -> str:
        if not credentials.valid:
            credentials.refresh(request)
        return str(credentials.token)

    return token
