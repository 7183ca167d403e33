"""The ``NotionClient`` port's conformance suite: the in-memory fake and the REST adapter.

- ``memory``: ``colony.testing.notion_server.MemoryNotion``, which keeps pages and blocks in
  memory and reads the block tree with the adapter's own ``read_blocks``;
- ``http``: ``HttpNotion`` (Notion's REST API, version 2022-06-28, through ``RestClient``)
  against ``colony.testing.notion_server.NotionServer`` on 127.0.0.1, which speaks
  ``GET /v1/pages/{id}`` and ``GET /v1/blocks/{id}/children`` with Notion's 100-block pages,
  cursors and error shapes. Notion itself needs a token and the network; the server is its
  stand-in (the same one the re-embed worker's tests use).

Both are seeded the same way (``put_page``, ``set_children``, ``delete_page``). The contract
(``colony.ports.NotionClient``, as the re-embed worker uses it): ``page`` gives the page's
id without dashes (whichever form was asked for), title, last edit, parent database id and
whether it is gone (archived or in the trash); ``page_text`` gives the text of supported
blocks in reading order, nested ones and every page of a long page included, counts
unsupported blocks by type and does not read below them; an unknown page is ``NotFound``.

And ``colony.ports.NotionAccess``, as connecting a workspace asks it (issue 31): the client
reads as one token of one workspace (the stand-in's default one, here), ``bot_workspace``
names that workspace, ``object_kind`` tells a database from a page, and nothing of another
workspace is readable through it, as if it did not exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from colony.adapters.notion import HttpNotion
from colony.adapters.rest import RestClient
from colony.errors import NotFound
from colony.ports import NotionClient, NotionPage, NotionWorkspaceClient
from colony.testing.notion_server import (
    DEFAULT_WORKSPACE,
    MemoryNotion,
    NotionServer,
    block,
    dashed,
)
from tests.conformance.exercise import exercised

PAGE = "1" * 32
DATABASE = "a" * 32
EDITED = "2026-11-28T08:30:00.000Z"


@pytest.fixture(params=["memory", "http"])
def seeded(request: pytest.FixtureRequest) -> Iterator[tuple[NotionClient, Any]]:
    """(the client, what seeds it: the fake itself or the stand-in server)."""
    if request.param == "memory":
        memory = MemoryNotion()
        yield memory, memory
        return
    with NotionServer() as server:
        client = HttpNotion(
            RestClient(
                "Notion",
                server.url,
                lambda: "secret_int",
                headers={"Notion-Version": "2022-06-28"},
                attempts=1,
            )
        )
        try:
            yield client, server
        finally:
            client.close()


def test_it_is_a_notion_client(seeded: tuple[NotionClient, Any]) -> None:
    """Every method of both ports (``NotionWorkspaceClient`` is the two), on one page in a
    database of the token's workspace."""
    client, seed = seeded
    seed.put_page(
        PAGE, "Pricing", [block("paragraph", "Per room, per month.")], parent_database=DATABASE
    )
    with exercised(NotionWorkspaceClient, client) as notion:
        assert notion.bot_workspace() == DEFAULT_WORKSPACE
        assert (notion.object_kind(DATABASE), notion.object_kind(PAGE)) == ("database", "page")
        assert [p.id for p in notion.query_database(DATABASE, None, 10).pages] == [PAGE]
        assert (notion.page(PAGE).title, notion.page(PAGE).parent_id) == ("Pricing", DATABASE)
        assert notion.page_text(PAGE).paragraphs == ["Per room, per month."]


@pytest.mark.parametrize("asked_as", [PAGE, dashed(PAGE)], ids=["compact", "dashed"])
def test_a_page_is_described_with_compact_ids(
    seeded: tuple[NotionClient, Any], asked_as: str
) -> None:
    client, seed = seeded
    seed.put_page(PAGE, "Product overview", [], parent_database=DATABASE, edited=EDITED)
    assert client.page(asked_as) == NotionPage(
        id=PAGE,
        title="Product overview",
        last_edited_time=EDITED,
        gone=False,
        parent_id=DATABASE,
    )


def test_a_workspace_page_has_no_parent_and_a_deleted_one_is_gone(
    seeded: tuple[NotionClient, Any],
) -> None:
    client, seed = seeded
    seed.put_page(PAGE, "Loose notes", [])
    assert client.page(PAGE).parent_id is None and client.page(PAGE).gone is False
    seed.delete_page(PAGE)
    assert client.page(PAGE).gone is True
    seed.put_page(PAGE, "Archived", [], archived=True)
    assert client.page(PAGE).gone is True


def test_page_text_reads_supported_blocks_in_order_nested_and_paged(
    seeded: tuple[NotionClient, Any],
) -> None:
    client, seed = seeded
    toggle = block("toggle", "Objection: we already have a tool", children=True)
    image = block("image", children=True)  # unsupported: counted, its children not read
    columns = block("column_list", children=True)  # a container: read through
    blocks = [
        block("heading_1", "Objections"),
        toggle,
        image,
        columns,
        block("to_do", "Send the ROI model", checked=True),
        block("paragraph"),  # empty: no paragraph
        *(block("bulleted_list_item", f"Point {n}") for n in range(130)),  # two pages of 100
        block("embed"),
    ]
    seed.put_page(PAGE, "Objections", blocks)
    seed.set_children(toggle["id"], [block("paragraph", "Answer: we ingest its exports.")])
    seed.set_children(image["id"], [block("paragraph", "never read")])
    seed.set_children(columns["id"], [block("quote", "Inside a column")])
    text = client.page_text(PAGE)
    assert text.paragraphs == [
        "# Objections",
        "Objection: we already have a tool",
        "Answer: we ingest its exports.",
        "> Inside a column",
        "- [x] Send the ROI model",
        *(f"- Point {n}" for n in range(130)),
    ]
    assert text.unsupported == {"image": 1, "embed": 1}
    assert text.blocks == len(blocks) + 2  # the toggle's child and the column's


def test_an_empty_page_has_no_text(seeded: tuple[NotionClient, Any]) -> None:
    client, seed = seeded
    seed.put_page(PAGE, "Empty", [])
    text = client.page_text(PAGE)
    assert (text.paragraphs, text.unsupported, text.blocks) == ([], {}, 0)


def test_an_unknown_page_is_not_found(seeded: tuple[NotionClient, Any]) -> None:
    client, seed = seeded
    seed.put_page(PAGE, "Known", [])
    with pytest.raises(NotFound):
        client.page("9" * 32)
    with pytest.raises(NotFound):
        client.page_text("9" * 32)


def test_the_bot_user_names_the_tokens_workspace(seeded: tuple[Any, Any]) -> None:
    assert seeded[0].bot_workspace() == DEFAULT_WORKSPACE


@pytest.mark.parametrize("dashes", [False, True], ids=["compact", "dashed"])
def test_object_kind_tells_a_database_from_a_page(seeded: tuple[Any, Any], dashes: bool) -> None:
    client, seed = seeded
    seed.put_page(PAGE, "Product overview", [], parent_database=DATABASE)
    loose = "2" * 32
    seed.put_page(loose, "Loose notes", [])
    asked = dashed if dashes else str
    assert client.object_kind(asked(DATABASE)) == "database"
    assert client.object_kind(asked(PAGE)) == "page"
    assert client.object_kind(asked(loose)) == "page"
    assert client.object_kind(asked("9" * 32)) is None


def test_another_workspaces_objects_are_as_if_they_did_not_exist(
    seeded: tuple[Any, Any],
) -> None:
    client, seed = seeded
    theirs, their_page = "e" * 32, "3" * 32
    seed.put_page(
        their_page,
        "Their pricing",
        [block("paragraph", "secret")],
        parent_database=theirs,
        workspace="ws-other",
    )
    assert client.object_kind(theirs) is None and client.object_kind(their_page) is None
    with pytest.raises(NotFound):
        client.page(their_page)
    with pytest.raises(NotFound):
        client.page_text(their_page)
    with pytest.raises(NotFound):
        client.query_database(theirs, None, 10)
    seed.put_page(PAGE, "Ours", [], parent_database=DATABASE)  # this token's own: readable
    assert [p.id for p in client.query_database(DATABASE, None, 10).pages] == [PAGE]
