"""A local stand-in for the Notion API (2022-06-28), speaking its REST shapes.

Routes: ``GET /v1/pages/{id}``, ``GET /v1/blocks/{id}/children`` and
``POST /v1/databases/{id}/query`` (a database's pages, oldest first; ``page_size`` at most
100, ``start_cursor``/``next_cursor``/``has_more`` pagination). ``put_database`` makes a
database exist (``put_page(parent_database=...)`` does too); a query of any other id is 404.
Requests need ``Authorization: Bearer`` and ``Notion-Version``; errors use Notion's shape
(``{"object": "error", "status", "code", "message"}``); ``rate_limit`` scripts 429
``rate_limited`` replies with ``Retry-After``.

``webhook_event`` builds an event body as Notion delivers it, and ``signed_headers`` signs it
the way Notion does, so tests and the demo post exactly what Notion would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from colony.adapters.notion import page_from_object, read_blocks
from colony.errors import NotFound
from colony.ports import DatabasePage, NotionPage, PageText
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route
from colony.webhooks import sign

EDITED = "2026-11-20T10:00:00.000Z"
ID = r"(?P<id>[0-9a-fA-F-]{32,36})"  # a page or block id, dashed or not


def notion_error(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"object": "error", "status": status, "code": code, "message": message})


def dashed(compact: str) -> str:
    c = compact.replace("-", "")
    return f"{c[:8]}-{c[8:12]}-{c[12:16]}-{c[16:20]}-{c[20:]}"


def block(kind: str, text: str = "", *, children: bool = False, **extra: Any) -> dict[str, Any]:
    """A block object; ``text`` becomes its rich text (ignored for types without any)."""
    body: dict[str, Any] = dict(extra)
    if text:
        body["rich_text"] = [
            {
                "type": "text",
                "text": {"content": text, "link": None},
                "plain_text": text,
                "href": None,
            }
        ]
    return {
        "object": "block",
        "id": str(uuid.uuid4()),
        "type": kind,
        "has_children": children,
        "archived": False,
        "in_trash": False,
        kind: body,
    }


def page_object(
    page_id: str, title: str, parent_database: str | None, edited: str, archived: bool
) -> dict[str, Any]:
    """A page object as ``GET /v1/pages/{id}`` returns it."""
    pid = page_id.replace("-", "")
    parent = (
        {"type": "database_id", "database_id": dashed(parent_database)}
        if parent_database
        else {"type": "workspace", "workspace": True}
    )
    return {
        "object": "page",
        "id": dashed(pid),
        "created_time": EDITED,
        "last_edited_time": edited,
        "archived": archived,
        "in_trash": archived,
        "parent": parent,
        "url": f"https://www.notion.so/{pid}",
        "properties": {
            "title": {
                "id": "title",
                "type": "title",
                "title": [{"type": "text", "text": {"content": title}, "plain_text": title}],
            }
        },
    }


class NotionPages:
    """A workspace's pages and block trees, as both stand-ins are seeded: ``put_page`` creates
    or replaces a page and its blocks."""

    def __init__(self) -> None:
        self._pages: dict[str, dict[str, Any]] = {}
        self._children: dict[str, list[dict[str, Any]]] = {}
        self._databases: set[str] = set()

    def put_database(self, database_id: str) -> None:
        self._databases.add(database_id.replace("-", ""))

    def database_pages(self, database_id: str) -> list[dict[str, Any]] | None:
        """The pages whose parent is the database, in creation order (None: no database)."""
        key = database_id.replace("-", "")
        if key not in self._databases:
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
    ) -> None:
        pid = page_id.replace("-", "")
        self._pages[pid] = page_object(pid, title, parent_database, edited, archived)
        self._children[pid] = list(blocks)
        if parent_database:
            self.put_database(parent_database)

    def set_children(self, block_id: str, blocks: Sequence[dict[str, Any]]) -> None:
        self._children[block_id.replace("-", "")] = list(blocks)

    def delete_page(self, page_id: str) -> None:
        self._pages[page_id.replace("-", "")]["in_trash"] = True


class NotionServer(NotionPages, ProviderServer):
    """Notion on 127.0.0.1: ``put_page`` creates or replaces a page and its blocks."""

    unauthorised = ("unauthorized", "API token is invalid.")
    rate_limited = ("rate_limited", "You have been rate limited.")

    def __init__(self) -> None:
        NotionPages.__init__(self)
        ProviderServer.__init__(
            self,
            routes=[
                Route.of("notion.pages.retrieve", "GET", rf"/v1/pages/{ID}", self._page),
                Route.of(
                    "notion.blocks.children", "GET", rf"/v1/blocks/{ID}/children", self._blocks
                ),
                Route.of(
                    "notion.databases.query", "POST", rf"/v1/databases/{ID}/query", self._query
                ),
            ],
        )

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        return notion_error(status, code, message)

    def _authorised(self, request: RecordedRequest) -> Reply | None:
        if (denied := super()._authorised(request)) is not None:
            return denied
        if not request.header("notion-version"):
            return notion_error(400, "missing_version", "Notion-Version header is required.")
        return None

    def _page(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        page = self._pages.get(request.params["id"].replace("-", ""))
        if page is None:
            return notion_error(404, "object_not_found", "Could not find page.")
        return Reply(200, page)

    def _blocks(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        key = request.params["id"].replace("-", "")
        if key not in self._children and not any(
            b["id"].replace("-", "") == key for bs in self._children.values() for b in bs
        ):
            return notion_error(404, "object_not_found", "Could not find block.")
        items = self._children.get(key, [])
        size = int((request.query.get("page_size") or ["100"])[0])
        if not 1 <= size <= 100:
            return notion_error(400, "validation_error", "page_size should be ≤ 100.")
        cursor = (request.query.get("start_cursor") or [""])[0]
        start = next((i for i, b in enumerate(items) if b["id"] == cursor), 0) if cursor else 0
        page = items[start : start + size]
        more = start + size < len(items)
        listing: dict[str, Any] = {
            "object": "list",
            "results": page,
            "type": "block",
            "block": {},
            "has_more": more,
            "next_cursor": items[start + size]["id"] if more else None,
        }
        return Reply(200, listing)

    def _query(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        pages = self.database_pages(request.params["id"])
        if pages is None:
            return notion_error(404, "object_not_found", "Could not find database.")
        body = request.body if isinstance(request.body, dict) else {}
        size = body.get("page_size", 100)
        if not isinstance(size, int) or not 1 <= size <= 100:
            return notion_error(400, "validation_error", "page_size should be ≤ 100.")
        start = _offset(pages, body.get("start_cursor"))
        if start is None:
            return notion_error(400, "validation_error", "start_cursor is not valid.")
        more = start + size < len(pages)
        listing: dict[str, Any] = {
            "object": "list",
            "results": pages[start : start + size],
            "type": "page_or_database",
            "page_or_database": {},
            "has_more": more,
            "next_cursor": pages[start + size]["id"] if more else None,
        }
        return Reply(200, listing)


def _offset(pages: Sequence[dict[str, Any]], cursor: Any) -> int | None:
    """Where a query resumes: Notion's cursor is the id of the first page not yet returned."""
    if not cursor:
        return 0
    return next((i for i, p in enumerate(pages) if p["id"] == cursor), None)


def webhook_event(
    page_id: str,
    *,
    kind: str = "page.content_updated",
    parent_database: str | None = None,
    timestamp: str = EDITED,
    workspace_id: str = "ws-demo",
    event_id: str | None = None,
) -> bytes:
    """A Notion webhook event body (the bytes Notion signs)."""
    parent = (
        {"id": dashed(parent_database), "type": "database"}
        if parent_database
        else {"id": "workspace", "type": "space"}
    )
    event = {
        "id": event_id or str(uuid.uuid4()),
        "timestamp": timestamp,
        "workspace_id": workspace_id,
        "workspace_name": "ZoomProp",
        "subscription_id": "sub-1",
        "integration_id": "int-1",
        "attempt_number": 1,
        "type": kind,
        "authors": [{"id": "user-1", "type": "person"}],
        "entity": {"id": dashed(page_id), "type": "page"},
        "data": {"parent": parent},
    }
    return json.dumps(event).encode()


def signed_headers(secret: str, body: bytes) -> dict[str, str]:
    return {"Content-Type": "application/json", "X-Notion-Signature": sign(secret, body)}


class MemoryNotion(NotionPages):
    """``colony.ports.NotionClient`` in memory, seeded as ``NotionServer`` is (``put_page``,
    ``set_children``, ``delete_page``); it reads the block tree with the adapter's own
    ``read_blocks``, so only the HTTP (paging, auth, errors) is left out."""

    def page(self, page_id: str) -> NotionPage:
        found = self._pages.get(page_id.replace("-", ""))
        if found is None:
            raise NotFound("Notion has no such object (GET 404)")
        return page_from_object(found)

    def query_database(self, database_id: str, cursor: str | None, page_size: int) -> DatabasePage:
        pages = self.database_pages(database_id)
        if pages is None:
            raise NotFound("Notion has no such object (POST 404)")
        start = _offset(pages, cursor) or 0
        more = start + page_size < len(pages)
        return DatabasePage(
            [page_from_object(p) for p in pages[start : start + page_size]],
            pages[start + page_size]["id"] if more else None,
        )

    def page_text(self, page_id: str) -> PageText:
        if page_id.replace("-", "") not in self._pages:
            raise NotFound("Notion has no such object (GET 404)")
        return read_blocks(
            lambda block_id: self._children.get(block_id.replace("-", ""), []), page_id
        )
