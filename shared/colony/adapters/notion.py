"""The Notion API (version 2022-06-28): pages, their block trees, and webhook signatures.

``colony.ports.NotionClient`` is the port the re-embed worker sees; ``HttpNotion`` speaks the
public REST shapes (``GET /v1/pages/{id}``, ``GET /v1/blocks/{id}/children`` with
``start_cursor`` / ``page_size`` pagination, children fetched for blocks with
``has_children``; ``POST /v1/databases/{id}/query`` one page at a time, for the backfill),
honours 429 ``Retry-After`` through ``RestClient``, and runs against
``https://api.notion.com`` or a local stand-in (``colony.testing.notion_server``).
``notion_for_token`` builds the client of one connected workspace; with ``attempts=1`` a 429
is raised at once (``ProviderUnavailable`` carrying ``Retry-After``) so a durable task can be
rescheduled instead of sleeping. It is also ``colony.ports.NotionAccess``, what connecting a
workspace asks of the token given (issue 31): whose it is (``GET /v1/users/me``, the bot
user's ``workspace_id``) and whether it reads each mapped id (``GET /v1/databases/{id}``, then
``GET /v1/pages/{id}``).

Webhook signatures are checked by ``colony.webhooks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from colony.adapters.rest import RestClient
from colony.errors import ConfigError, ValidationFailed
from colony.ports import DatabasePage, NotionKind, NotionPage, PageText
from colony.settings import Settings
from colony.webhooks import compact_id

NOTION_VERSION = "2022-06-28"
MAX_BLOCKS = 5_000  # a page past this is not a knowledge document; refuse rather than page on
MAX_DEPTH = 4

# Block types whose rich text is knowledge, and how each is written out as text (the prefixes
# are how ``colony.knowledge.chunking`` tells headings and list items from paragraphs).
_PREFIX = {
    "paragraph": "",
    "quote": "> ",
    "callout": "",
    "toggle": "",
    "heading_1": "# ",
    "heading_2": "## ",
    "heading_3": "### ",
    "bulleted_list_item": "- ",
    "numbered_list_item": "1. ",
    "to_do": "- ",
    "code": "",
}
# Structure without text of its own (its children are read); everything else is unsupported.
_CONTAINERS = frozenset({"column_list", "column", "synced_block", "table", "table_row"})


# Notion answers an id it will not show this token with 404 ``object_not_found``, an id of
# the other kind with 400 ``validation_error``, and a capability the integration lacks with
# 403 ``restricted_resource``: to the question "can this token read it?" each is a no.
_NOT_READABLE = (400, 403, 404)


class HttpNotion:
    """``NotionClient`` and ``NotionAccess`` over the REST API."""

    def __init__(self, rest: RestClient) -> None:
        self._rest = rest

    def bot_workspace(self) -> str | None:
        answer = self._rest.send("GET", "/v1/users/me", accept=(401, 403))
        if answer.status_code != 200:  # 401 "API token is invalid.", 403: not ours to ask
            return None
        bot = answer.json().get("bot")
        workspace = bot.get("workspace_id") if isinstance(bot, Mapping) else None
        return workspace if isinstance(workspace, str) and workspace else None

    def object_kind(self, object_id: str) -> NotionKind | None:
        kinds: tuple[NotionKind, ...] = ("database", "page")
        for kind in kinds:
            answer = self._rest.send("GET", f"/v1/{kind}s/{object_id}", accept=_NOT_READABLE)
            if answer.status_code == 200 and answer.json().get("object") == kind:
                return kind
        return None

    def page(self, page_id: str) -> NotionPage:
        return page_from_object(self._rest.send("GET", f"/v1/pages/{page_id}").json())

    def page_text(self, page_id: str) -> PageText:
        return read_blocks(self._children, page_id)

    def query_database(self, database_id: str, cursor: str | None, page_size: int) -> DatabasePage:
        body: dict[str, Any] = {"page_size": max(1, min(page_size, 100))}
        if cursor:
            body["start_cursor"] = cursor
        answer = self._rest.send("POST", f"/v1/databases/{database_id}/query", json=body).json()
        pages = [
            page_from_object(item)
            for item in answer.get("results") or []
            if isinstance(item, Mapping) and item.get("object") == "page"
        ]
        more = bool(answer.get("has_more")) and bool(answer.get("next_cursor"))
        return DatabasePage(pages, str(answer["next_cursor"]) if more else None)

    def _children(self, block_id: str) -> Iterator[Mapping[str, Any]]:
        """A block's children, every page of them (fetched as they are read)."""
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"page_size": 100}
            if cursor:
                params["start_cursor"] = cursor
            body = self._rest.send("GET", f"/v1/blocks/{block_id}/children", params=params).json()
            yield from body.get("results") or []
            if not body.get("has_more") or not body.get("next_cursor"):
                return
            cursor = str(body["next_cursor"])

    def close(self) -> None:
        self._rest.close()


def page_from_object(body: Mapping[str, Any]) -> NotionPage:
    """A Notion page object as the port's ``NotionPage`` (ids without dashes)."""
    parent = body.get("parent") or {}
    parent_id = parent.get(str(parent.get("type"))) if isinstance(parent, dict) else None
    return NotionPage(
        id=compact_id(str(body["id"])),
        title=_title(body.get("properties") or {}),
        last_edited_time=str(body.get("last_edited_time") or ""),
        gone=bool(body.get("archived") or body.get("in_trash")),
        parent_id=compact_id(parent_id) if isinstance(parent_id, str) else None,
    )


Children = Callable[[str], Iterable[Mapping[str, Any]]]


def read_blocks(children: Children, page_id: str) -> PageText:
    """A page's block tree as text: ``children(block_id)`` gives a block's child blocks.

    Supported blocks become paragraphs (empty ones are skipped); containers are read through;
    any other block is counted in ``unsupported`` by type and its children are not read.
    Nesting is read ``MAX_DEPTH`` levels deep, never into a child page; past ``MAX_BLOCKS``
    blocks the page is refused (``ValidationFailed``).
    """
    out = PageText([])
    _walk(children, page_id, 0, out)
    return out


def _walk(children: Children, block_id: str, depth: int, out: PageText) -> None:
    for block in children(block_id):
        out.blocks += 1
        if out.blocks > MAX_BLOCKS:
            raise ValidationFailed(f"Notion page has more than {MAX_BLOCKS} blocks")
        kind = str(block.get("type") or "unsupported")
        text = block_text(block)
        if text is not None:
            if text.strip():
                out.paragraphs.append(text)
        elif kind not in _CONTAINERS:
            out.unsupported[kind] = out.unsupported.get(kind, 0) + 1
            continue  # an unsupported block's children are not read either
        if block.get("has_children") and depth < MAX_DEPTH and kind != "child_page":
            _walk(children, str(block["id"]), depth + 1, out)


def block_text(block: Mapping[str, Any]) -> str | None:
    """The text of a supported block (None for anything else)."""
    kind = block.get("type")
    if kind not in _PREFIX:
        return None
    content = block.get(str(kind)) or {}
    text = "".join(
        str(part.get("plain_text") or (part.get("text") or {}).get("content") or "")
        for part in content.get("rich_text") or []
        if isinstance(part, Mapping)
    )
    if kind == "to_do":
        return f"- [{'x' if content.get('checked') else ' '}] {text}"
    return _PREFIX[str(kind)] + text if text.strip() else ""


def _title(properties: Mapping[str, Any]) -> str:
    for prop in properties.values():
        if isinstance(prop, Mapping) and prop.get("type") == "title":
            return "".join(str(p.get("plain_text") or "") for p in prop.get("title") or [])
    return ""


def notion_for_token(
    settings: Settings,
    token: str,
    *,
    attempts: int = 1,
    sleep: Callable[[float], None] | None = None,
) -> HttpNotion:
    """The client of one connected workspace, reading with its ``token``."""
    if not token:
        raise ConfigError("a connected Notion workspace has an empty token")
    extra: dict[str, Any] = {"sleep": sleep} if sleep else {}
    rest = RestClient(
        "Notion",
        settings.notion_base_url or "https://api.notion.com",
        lambda: token,
        headers={"Notion-Version": NOTION_VERSION},
        attempts=attempts,
        **extra,
    )
    return HttpNotion(rest)
