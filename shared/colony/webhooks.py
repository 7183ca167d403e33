"""What a provider's notification means and whether it is genuine: Drive watch channels and
Notion webhooks. Pure rules, no I/O (the clients that fetch are ``colony.adapters.drive`` and
``.notion``), shared by the flows that receive notifications and the tools that set them up.

Drive watch channels: each org's folder is watched with ``files.watch``; the channel's
``token`` (echoed by Drive as ``X-Goog-Channel-Token``) is ``<org id>.<HMAC-SHA256(secret, org
id, a line feed, folder id)>``. One configured secret authenticates every channel, names the
org, and binds the org to its own folder: the folder comes from ``X-Goog-Resource-URI``, an
unauthenticated header, so a token issued for org A's folder must never let a notification
naming org B's folder read B's transcripts into A.

Whose folder it is: Colony reads every org's folders through one Drive identity, so that
identity reaching a folder proves nothing about which org owns it. An org proves a folder is
its own by placing a file named ``folder_marker`` (``colony-verify-`` and an HMAC of the org
and the folder under the same secret) in it: only someone who can write to the folder can,
and another org's marker for the same folder has another name (``docs/security.md``).

Notion webhook bodies are signed: ``X-Notion-Signature: sha256=<hex HMAC-SHA256(verification
token, raw body)>``; ``verify_signature`` checks it in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from typing import TYPE_CHECKING, Protocol

from colony.errors import ConfigError, Unauthorized

if TYPE_CHECKING:
    from colony.ports import DriveFile


class HeaderReader(Protocol):
    """What is read of a request's headers (werkzeug's, case-insensitive, or a dict)."""

    def get(self, key: str, /) -> str | None: ...


GOOGLE_DOC = "application/vnd.google-apps.document"
TEXT_TYPES = ("text/plain", "text/markdown", "text/vtt")
MAX_TRANSCRIPT_BYTES = 4_000_000  # ~1M tokens: far past what AGT-006 accepts, so it can say so
MARKER_PREFIX = "colony-verify-"
_FOLDER_IN_URI = re.compile(r"/drive/v3/files/([A-Za-z0-9_-]{1,200})(?:[/?]|$)")


def is_transcript(file: DriveFile) -> bool:
    """Meet Notes are Google Docs; plain-text uploads are accepted too. Folders, videos,
    ownership markers and everything else in the folder are not transcripts."""
    if file.name.startswith(MARKER_PREFIX):
        return False
    return file.mime_type == GOOGLE_DOC or file.mime_type in TEXT_TYPES


def folder_marker(secret: str, org_id: str, folder_id: str) -> str:
    """The name of the file that proves ``folder_id`` is ``org_id``'s once it is in it."""
    if not org_id or not folder_id or "\n" in org_id or "\n" in folder_id:
        raise ConfigError("a Drive folder marker needs an org id and a folder id")
    message = f"folder-marker\n{org_id}\n{folder_id}".encode()
    return MARKER_PREFIX + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]


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


def compact_id(notion_id: str) -> str:
    """Notion ids with or without dashes name the same object; we store them without."""
    return notion_id.replace("-", "").lower()


def sign(secret: str, body: bytes) -> str:
    """The ``X-Notion-Signature`` value Notion sends for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify_signature(secret: str | None, body: bytes, header: str | None) -> None:
    """``Unauthorized`` unless ``header`` is Notion's signature of exactly ``body``."""
    if not secret:
        raise ConfigError("COLONY_NOTION_SIGNING_SECRET is required to accept Notion events")
    if not header:
        raise Unauthorized("the Notion event is not signed (no X-Notion-Signature)")
    if not hmac.compare_digest(sign(secret, body).encode(), header.strip().encode()):
        raise Unauthorized("the X-Notion-Signature does not match the body")


# Mail provider tags (Resend): only ASCII letters, digits, ``_`` and ``-``, at most 256. A
# value outside that travels as ``b32-`` and its base32 (lower case, no padding).
_TAG = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
_B32 = "b32-"


def tag_value(value: str) -> str:
    """``value`` as a provider tag can carry it (``untag`` reverses it)."""
    if _TAG.match(value) and not value.startswith(_B32):
        return value
    return _B32 + base64.b32encode(value.encode()).decode().rstrip("=").lower()


def untag(value: str) -> str:
    """The value ``tag_value`` encoded."""
    if not value.startswith(_B32):
        return value
    body = value[len(_B32) :].upper()
    return base64.b32decode(body + "=" * (-len(body) % 8)).decode()
