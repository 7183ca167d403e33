"""Notion's content as the stand-ins hold it: workspaces' pages, block trees and databases
(``NotionPages``, seeded alike by both), and ``MemoryNotion``, the ports' fake that reads
them as one workspace's token does, without HTTP (``colony.testing.notion_server`` serves
them over HTTP)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colony.adapters.notion import page_from_object, read_blocks
from colony.errors import NotFound
from colony.ports import DatabasePage, NotionKind, NotionPage, PageText
from colony.testing.notion_objects import DEFAULT_WORKSPACE, EDITED, page_object


class NotionPages:
    """Workspaces' pages, block trees and databases, as both stand-ins are seeded:
    ``put_page`` creates or replaces a page and its blocks, in ``workspace`` (unnamed: where
    the page or its database already is, else ``home``: ``DEFAULT_WORKSPACE``, or the one
    workspace a ``MemoryNotion`` sees)."""

    def __init__(self, home: str = DEFAULT_WORKSPACE) -> None:
        self.home = home
        self._pages: dict[str, dict[str, Any]] = {}
        self._children: dict[str, list[dict[str, Any]]] = {}
        self._databases: set[str] = set()
        self._workspace_of: dict[str, str] = {}  # page, block or database id → its workspace

    def put_database(self, database_id: str, *, workspace: str | None = None) -> None:
        key = database_id.replace("-", "")
        self._databases.add(key)
        self._workspace_of[key] = workspace or self._workspace_of.get(key) or self.home

    def readable(self, object_id: str, workspace: str) -> bool:
        """Whether a token of ``workspace`` may read the page, block or database."""
        return self._workspace_of.get(object_id.replace("-", "")) == workspace

    def kind_in(self, object_id: str, workspace: str) -> NotionKind | None:
        """What ``object_id`` is to a token of ``workspace`` (None: nothing it may read)."""
        key = object_id.replace("-", "")
        if not self.readable(key, workspace):
            return None
        return "database" if key in self._databases else "page" if key in self._pages else None

    def database_pages(self, database_id: str, workspace: str) -> list[dict[str, Any]] | None:
        """The pages whose parent is the database, in creation order (None: no database a
        token of ``workspace`` may read)."""
        key = database_id.replace("-", "")
        if key not in self._databases or not self.readable(key, workspace):
            return None
        return [
            p
            for p in self._pages.values()
            if (p["parent"].get("database_id") or "").replace("-", "") == key
        ]

    def put_page(
        self,
        page_id: str,
        title: str,
        blocks: Sequence[dict[str, Any]],
        *,
        parent_database: str | None = None,
        edited: str = EDITED,
        archived: bool = False,
        workspace: str | None = None,
    ) -> None:
        pid = page_id.replace("-", "")
        self._pages[pid] = page_object(pid, title, parent_database, edited, archived)
        parent = (parent_database or "").replace("-", "")
        # unnamed: where the page already is, else its database's workspace, else home
        self._workspace_of[pid] = (
            workspace or self._workspace_of.get(pid) or self._workspace_of.get(parent) or self.home
        )
        self.set_children(pid, blocks)
        if parent_database:
            self.put_database(parent_database, workspace=self._workspace_of[pid])

    def set_children(self, block_id: str, blocks: Sequence[dict[str, Any]]) -> None:
        key = block_id.replace("-", "")
        self._children[key] = list(blocks)
        workspace = self._workspace_of.setdefault(key, self.home)
        for child in blocks:  # a page's blocks are its workspace's
            self._workspace_of[str(child["id"]).replace("-", "")] = workspace

    def delete_page(self, page_id: str) -> None:
        self._pages[page_id.replace("-", "")]["in_trash"] = True


def cursor_offset(pages: Sequence[dict[str, Any]], cursor: Any) -> int | None:
    """Where a query resumes: Notion's cursor is the id of the first page not yet returned."""
    if not cursor:
        return 0
    return next((i for i, p in enumerate(pages) if p["id"] == cursor), None)


class MemoryNotion(NotionPages):
    """``colony.ports.NotionClient`` and ``NotionAccess`` in memory, as one token of
    ``workspace`` sees Notion; seeded as ``NotionServer`` is (``put_page``, ``set_children``,
    ``delete_page``, each in a workspace). It reads the block tree with the adapter's own
    ``read_blocks``, so only the HTTP (paging, auth, errors) is left out."""

    def __init__(self, workspace: str = DEFAULT_WORKSPACE) -> None:
        super().__init__(home=workspace)
        self.workspace = workspace

    def bot_workspace(self) -> str | None:
        return self.workspace

    def object_kind(self, object_id: str) -> NotionKind | None:
        return self.kind_in(object_id, self.workspace)

    def page(self, page_id: str) -> NotionPage:
        found = self._pages.get(page_id.replace("-", ""))
        if found is None or not self.readable(page_id, self.workspace):
            raise NotFound("Notion has no such object (GET 404)")
        return page_from_object(found)

    def query_database(self, database_id: str, cursor: str | None, page_size: int) -> DatabasePage:
        pages = self.database_pages(database_id, self.workspace)
        if pages is None:
            raise NotFound("Notion has no such object (POST 404)")
        start = cursor_offset(pages, cursor) or 0
        more = start + page_size < len(pages)
        return DatabasePage(
            [page_from_object(p) for p in pages[start : start + page_size]],
            pages[start + page_size]["id"] if more else None,
        )

    def page_text(self, page_id: str) -> PageText:
        if page_id.replace("-", "") not in self._pages or not self.readable(
            page_id, self.workspace
        ):
            raise NotFound("Notion has no such object (GET 404)")
        return read_blocks(
            lambda block_id: self._children.get(block_id.replace("-", ""), []), page_id
        )
