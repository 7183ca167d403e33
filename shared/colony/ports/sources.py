"""The document sources the knowledge webhooks read: Drive folders (listing, reading,
watching) and Notion pages and databases.

Adapters: ``colony.adapters.drive``, ``colony.adapters.notion``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class DriveFile:
    """A file of a Drive folder, as the Drive API lists it."""

    id: str
    name: str
    mime_type: str
    modified_time: str | None = None


@runtime_checkable
class DriveClient(Protocol):
    """The Drive calls the recording webhook makes."""

    def list_folder(self, folder_id: str) -> Iterator[DriveFile]:
        """Every non-trashed file directly in ``folder_id``, oldest first (all pages)."""
        ...

    def download_text(self, file: DriveFile, max_bytes: int) -> bytes:
        """The file's content as plain text bytes (Docs are exported); raises
        ``ResponseTooLarge`` past ``max_bytes``."""
        ...


@dataclass(frozen=True, slots=True)
class WatchChannel:
    """A Drive push channel as Drive created it: ``expiration`` in epoch milliseconds."""

    id: str
    resource_id: str
    expiration_ms: int


@runtime_checkable
class DriveChannels(Protocol):
    """The Drive calls that keep a folder watched (``flows.recordings.drive_channels``)."""

    def watch_folder(
        self, folder_id: str, channel_id: str, address: str, token: str, expiration_ms: int
    ) -> WatchChannel:
        """``files.watch`` on the folder: notifications go to ``address`` with ``token``."""
        ...

    def stop_channel(self, channel_id: str, resource_id: str) -> None:
        """``channels.stop``; a channel Drive no longer knows (404) counts as stopped."""
        ...


@runtime_checkable
class DriveWatcher(DriveClient, DriveChannels, Protocol):
    """Both: a watch first lists the folder for the org's ownership marker
    (``flows.recordings.drive_folders``)."""


@dataclass(frozen=True, slots=True)
class NotionPage:
    """A Notion page's metadata: its id, title, last edit, parent and whether it is gone."""

    id: str
    title: str
    last_edited_time: str
    gone: bool  # archived or in the trash: its chunks must go
    parent_id: str | None


@dataclass
class PageText:
    """A page's blocks as paragraphs of text, with what could not be read."""

    paragraphs: list[str]
    unsupported: dict[str, int] = field(default_factory=dict)
    blocks: int = 0


@dataclass(frozen=True, slots=True)
class DatabasePage:
    """One page of a Notion database query: its pages and the cursor of the next (None:
    the last)."""

    pages: list[NotionPage]
    next_cursor: str | None


@runtime_checkable
class NotionClient(Protocol):
    def page(self, page_id: str) -> NotionPage: ...

    def page_text(self, page_id: str) -> PageText: ...

    def query_database(
        self, database_id: str, cursor: str | None, page_size: int
    ) -> DatabasePage: ...


NotionKind = Literal["database", "page"]


@runtime_checkable
class NotionAccess(Protocol):
    """What one integration token reaches (issue 31), asked before a workspace is connected
    (``flows.knowledge.notion_workspaces.connect``). A Notion token belongs to one workspace and
    reads only what that workspace shared with its integration, so these two answers prove that the
    token is the named workspace's and that each mapped id is in it."""

    def bot_workspace(self) -> str | None:
        """The id of the workspace the token's bot user belongs to (``GET /v1/users/me``,
        ``bot.workspace_id``), as Notion's events name it; None if Notion refuses the token
        or its bot names no workspace."""
        ...

    def object_kind(self, object_id: str) -> NotionKind | None:
        """Whether the token can read ``object_id`` as a database or as a page; None when
        it cannot (unknown, not shared with the integration, or another workspace's)."""
        ...


@runtime_checkable
class NotionWorkspaceClient(NotionClient, NotionAccess, Protocol):
    """Both, reading with a connected workspace's stored token: the workers read its pages,
    and the daily reconciliation asks again whose the token is before it reads any
    (``flows.knowledge.notion_workspaces.reprove``)."""
