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

from typing import Any

from colony.testing.notion_objects import (
    DEFAULT_WORKSPACE,
    EDITED,
    block,
    bot_user,
    dashed,
    database_object,
    signed_headers,
    webhook_event,
)
from colony.testing.notion_pages import MemoryNotion, NotionPages, cursor_offset
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route

__all__ = [
    "DEFAULT_WORKSPACE",
    "EDITED",
    "MemoryNotion",
    "NotionServer",
    "block",
    "dashed",
    "notion_error",
    "signed_headers",
    "webhook_event",
]

ID = r"(?P<id>[0-9a-fA-F-]{32,36})"  # a page or block id, dashed or not


def notion_error(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"object": "error", "status": status, "code": code, "message": message})


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
        start = cursor_offset(pages, body.get("start_cursor"))
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
