"""Notion's JSON, as its API (2022-06-28) returns it and its webhooks deliver it: the page,
database, block and bot-user objects the stand-ins serve, and a webhook event with its
signature, so tests and the demo build exactly what Notion would."""

from __future__ import annotations

import json
import uuid
from typing import Any

from colony.webhooks import sign

EDITED = "2026-11-20T10:00:00.000Z"
DEFAULT_WORKSPACE = "ws-demo"  # where an object is when no workspace is named


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
