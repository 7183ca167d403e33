"""A local stand-in for the Notion API (2022-06-28), speaking its REST shapes.

Routes: ``GET /v1/users/me`` (the token's bot user, naming its workspace in
``bot.workspace_id``), ``GET /v1/pages/{id}``, ``GET /v1/databases/{id}``,
``GET /v1/blocks/{id}/children`` and ``POST /v1/databases/{id}/query`` (a database's pages,
oldest first; ``page_size`` at most 100, ``start_cursor``/``next_cursor``/``has_more``
pagination). ``put_database`` makes a database exist (``put_page(parent_database=...)`` does
too); a query of any other id is 404.

Workspaces, as Notion's integration tokens see them: every page, block and database belongs
to one workspace (``workspace=`` when it is put; unnamed, where it or its database already
is, else ``DEFAULT_WORKSPACE``), and a
token reads only its own workspace's: another workspace's object is 404
``object_not_found``, as one never shared with the integration is. ``add_token`` gives a
workspace its integration token; until one is added, any bearer token is the default
workspace's (the single-workspace tests and the demo), and once one is, a token never added
is 401 ``unauthorized``.

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
from colony.ports import DatabasePage, NotionKind, NotionPage, PageText
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route
from colony.webhooks import sign

EDITED = "2026-11-20T10:00:00.000Z"
ID = r"(?P<id>[0-9a-fA-F-]{32,36})"  # a page or block id, dashed or not
DEFAULT_WORKSPACE = "ws-demo"


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


def database_object(database_id: str) -> dict[str, Any]:
    """A database object as ``GET /v1/databases/{id}`` returns it (the fields we read)."""
    did = database_id.replace("-", "")
    return {
        "object": "database",
        "id": dashed(did),
        "created_time": EDITED,
        "last_edited_time": EDITED,
        "title": [],
        "parent": {"type": "workspace", "workspace": True},
        "url": f"https://www.notion.so/{did}",
        "archived": False,
        "in_trash": False,
        "properties": {},
    }


def bot_user(workspace_id: str) -> dict[str, Any]:
    """The bot user ``GET /v1/users/me`` returns for a token of ``workspace_id``."""
    return {
        "object": "user",
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"notion-bot/{workspace_id}")),
        "name": "Colony",
        "avatar_url": None,
        "type": "bot",
        "bot": {
            "owner": {"type": "workspace", "workspace": True},
            "workspace_id": workspace_id,
            "workspace_name": f"Workspace {workspace_id}",
            "workspace_limits": {"max_file_upload_size_in_bytes": 5_368_709_120},
        },
    }


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


class NotionServer(NotionPages, ProviderServer):
    """Notion on 127.0.0.1: ``put_page`` creates or replaces a page and its blocks;
    ``add_token`` gives a workspace its integration token."""

    unauthorised = ("unauthorized", "API token is invalid.")
    rate_limited = ("rate_limited", "You have been rate limited.")

    def __init__(self) -> None:
        NotionPages.__init__(self)
        self._tokens: dict[str, str] = {}  # integration token → its workspace
        ProviderServer.__init__(
            self,
            routes=[
                Route.of("notion.users.me", "GET", r"/v1/users/me", self._me),
                Route.of("notion.pages.retrieve", "GET", rf"/v1/pages/{ID}", self._page),
                Route.of(
                    "notion.databases.retrieve", "GET", rf"/v1/databases/{ID}", self._database
                ),
                Route.of(
                    "notion.blocks.children", "GET", rf"/v1/blocks/{ID}/children", self._blocks
                ),
                Route.of(
                    "notion.databases.query", "POST", rf"/v1/databases/{ID}/query", self._query
                ),
            ],
        )

    def add_token(self, token: str, workspace: str) -> None:
        """``token`` is the integration token of ``workspace`` (from now on, every token a
        request carries must have been added)."""
        self._tokens[token] = workspace

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        return notion_error(status, code, message)

    def _authorised(self, request: RecordedRequest) -> Reply | None:
        if (denied := super()._authorised(request)) is not None:
            return denied
        if not request.header("notion-version"):
            return notion_error(400, "missing_version", "Notion-Version header is required.")
        if self._workspace(request) is None:
            return self.provider_error(401, *self.unauthorised)
        return None

    def _workspace(self, request: RecordedRequest) -> str | None:
        """The workspace the request's token belongs to (None: a token Notion never issued)."""
        token = (request.header("authorization") or "").removeprefix("Bearer ")
        if not self._tokens:
            return self.home
        return self._tokens.get(token)

    def _seen_by(self, request: RecordedRequest) -> str:
        workspace = self._workspace(request)
        assert workspace is not None  # _authorised refused the request otherwise
        return workspace

    def _me(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        return Reply(200, bot_user(self._seen_by(request)))

    def _page(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        key = request.params["id"].replace("-", "")
        page = self._pages.get(key)
        if page is None or not self.readable(key, self._seen_by(request)):
            return notion_error(404, "object_not_found", "Could not find page.")
        return Reply(200, page)

    def _database(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        key = request.params["id"].replace("-", "")
        if self.kind_in(key, self._seen_by(request)) != "database":
            return notion_error(404, "object_not_found", "Could not find database.")
        return Reply(200, database_object(key))

    def _blocks(self, request: RecordedRequest) -> Reply:
        if (denied := self._authorised(request)) is not None:
            return denied
        key = request.params["id"].replace("-", "")
        if not self.readable(key, self._seen_by(request)):
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
        pages = self.database_pages(request.params["id"], self._seen_by(request))
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
    workspace_id: str = DEFAULT_WORKSPACE,
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
        start = _offset(pages, cursor) or 0
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
