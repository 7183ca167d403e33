"""The Knowledge Core editor (issue 34 item 2) over real HTTP: the chat function served by
functions-framework, the embedded PostgreSQL with pgvector, the offline embedder the
function itself is composed with, local bearer tokens, two tenants.

A person writes a document, finds it by filter and by the agents' own retrieval, reads its
chunks, edits one paragraph (only that chunk is embedded again), seeds a KC-08 exemplar
that AGT-005's selection then reads by angle and tier, and retires a document; a Notion
document is read-only (409, its page's link); every change is on the audit log as the
person's; another org sees and touches none of it; bad input is a clear 4xx.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import ChunkIn, KnowledgeStore
from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.store import Database
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("fn:chat", "ENT-007")

ORG, OTHER = "org_kc_editor", "org_kc_other"
NOTION_PAGE = "1f2e3d4c-5b6a-4789-9abc-def012345678"
PARAGRAPHS = [
    f"Paragraph {n}: ZoomProp keeps facilities teams ahead of inspections "
    + " ".join(f"word{n}x{i}" for i in range(120))
    for n in range(3)
]
REWRITTEN = "Paragraph 1, rewritten: " + " ".join(f"fresh{i}" for i in range(120))


@dataclass
class Api:
    base: str
    http: httpx.Client
    tokens: dict[str, str]

    def call(self, method: str, path: str, org: str = ORG, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[org]}"}
        return self.http.request(method, f"{self.base}{path}", headers=headers, **kwargs)


@pytest.fixture
def api(testdb: PgDB, tmp_path: Path) -> Iterator[tuple[Api, Database]]:
    db = testdb.app()
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    # A Notion page the org's workspace synced (the same store and embedder the function has).
    KnowledgeStore(db, OfflineHashEmbedder()).sync_source(
        ORG, "notion", NOTION_PAGE, [ChunkIn("KC-01", "ZoomProp positioning.", title="Positioning")]
    )
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
    }
    tokens = {
        ORG: mint_local_token(tmp_path, ORG, user_id="user_ana"),
        OTHER: mint_local_token(tmp_path, OTHER, user_id="user_eve"),
    }
    with (
        FunctionServers(env, ["chat"], log_dir=tmp_path) as servers,
        httpx.Client(timeout=30) as http,
    ):
        yield Api(servers.urls["chat"], http, tokens), db


def audit(db: Database, org: str) -> list[dict[str, Any]]:
    with db.transaction(org) as cur:
        cur.execute(
            "SELECT actor, channel, action, detail FROM audit_log WHERE action LIKE 'kc.%%'"
            " ORDER BY id"
        )
        names = [c[0] for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def test_a_person_writes_finds_edits_and_retires_a_document(api: tuple[Api, Database]) -> None:
    kc, db = api
    write = {
        "domain": "KC-04",
        "title": "Objection: we already have a CMMS",
        "body": "\n\n".join(PARAGRAPHS),
        "tags": {"objection": "incumbent"},
    }
    made = kc.call("POST", "/kc/documents", json=write)
    assert made.status_code == 201, made.text
    doc = made.json()
    assert doc["source"] == "editor" and doc["domain"] == "KC-04"
    assert (doc["embedded"], doc["unchanged"], doc["deleted"]) == (3, 0, 0)  # three chunks
    ref = {"source": "editor", "id": doc["source_id"]}

    domains = {d["domain"]: d for d in kc.call("GET", "/kc").json()["domains"]}
    assert len(domains) == 10 and domains["KC-04"]["documents"] == 1
    assert domains["KC-04"]["chunks"] == 3 and domains["KC-01"]["documents"] == 1

    listed = kc.call("GET", "/kc/domains/KC-04/documents", params={"contains": "CMMS"}).json()
    assert [d["title"] for d in listed["documents"]] == [write["title"]]
    assert listed["documents"][0]["chunks"] == 3 and listed["next_offset"] is None
    none = kc.call("GET", "/kc/domains/KC-04/documents", params={"contains": "no such words"})
    assert none.json()["documents"] == []

    found = kc.call("GET", "/kc/domains/KC-04/search", params={"q": PARAGRAPHS[1], "k": 3})
    assert found.status_code == 200, found.text
    results = found.json()["results"]
    assert results[0]["source_id"] == doc["source_id"] and results[0]["chunk_index"] == 1
    assert results[0]["similarity"] > results[-1]["similarity"]

    stored = kc.call("GET", "/kc/document", params=ref).json()
    assert stored["editable"] and stored["notion_url"] is None
    assert [c["content"] for c in stored["chunks"]] == [" ".join(p.split()) for p in PARAGRAPHS]
    hashes = [c["content_hash"] for c in stored["chunks"]]

    edited = dict(write, body="\n\n".join([PARAGRAPHS[0], REWRITTEN, PARAGRAPHS[2]]))
    changed = kc.call("PUT", "/kc/document", params=ref, json=edited)
    assert changed.status_code == 200, changed.text
    assert (changed.json()["embedded"], changed.json()["unchanged"]) == (1, 2)
    after = kc.call("GET", "/kc/document", params=ref).json()["chunks"]
    assert [c["content_hash"] for c in after][0::2] == hashes[0::2]  # untouched chunks kept
    assert after[1]["content"] == REWRITTEN

    retired = kc.call("DELETE", "/kc/document", params=ref)
    assert retired.status_code == 200 and retired.json()["deleted"] == 3
    assert kc.call("GET", "/kc/document", params=ref).status_code == 404
    assert kc.call("DELETE", "/kc/document", params=ref).status_code == 404  # nothing twice

    trail = audit(db, ORG)
    assert [(a["actor"], a["channel"], a["action"]) for a in trail] == [
        ("user_ana", "ui", "kc.create"),
        ("user_ana", "ui", "kc.edit"),
        ("user_ana", "ui", "kc.retire"),
    ]
    assert trail[1]["detail"] == {
        "domain": "KC-04",
        "source": "editor",
        "source_id": doc["source_id"],
        "embedded": 1,
        "unchanged": 2,
        "deleted": 0,
    }
    assert all("paragraph" not in str(a["detail"]).lower() for a in trail)  # never the text


def test_an_exemplar_is_seeded_for_its_angle_and_tier(api: tuple[Api, Database]) -> None:
    kc, db = api
    seed = {
        "angle": "Signal",
        "tier": "T2",
        "step": 2,
        "title": "Follow-up after a new inspection rule",
        "body": "Hi {first_name}, following up on the rule change we discussed.",
    }
    made = kc.call("POST", "/kc/exemplars", json=seed)
    assert made.status_code == 201, made.text
    ref = {"source": "editor", "id": made.json()["source_id"]}
    stored = kc.call("GET", "/kc/document", params=ref).json()
    assert stored["domain"] == "KC-08" and len(stored["chunks"]) == 1  # kept whole
    assert stored["tags"] == {"angle": "Signal", "tier": "T2", "step": "2"}
    # AGT-005's own selection reads it for its angle and tier, not for another angle.
    store = KnowledgeStore(db, OfflineHashEmbedder())
    vector = store.embed_query("inspection rule follow-up")
    picks, _ = store.exemplars(ORG, vector, angle="Signal", tier="T2", k=1)
    assert [(p.title, p.selected_by) for p in picks] == [(seed["title"], "angle+tier")]
    other, _ = store.exemplars(ORG, vector, angle="Pain", tier="T2", k=1)
    assert [p.selected_by for p in other] == ["fallback"]  # only as another angle's stand-in
    bad = kc.call("POST", "/kc/exemplars", json=dict(seed, angle="Shouting"))
    assert bad.status_code == 400 and "angle" in bad.json()["error"]["message"]


def test_a_notion_document_is_read_only_and_links_to_its_page(api: tuple[Api, Database]) -> None:
    kc, db = api
    ref = {"source": "notion", "id": NOTION_PAGE}
    doc = kc.call("GET", "/kc/document", params=ref).json()
    assert not doc["editable"]
    assert doc["notion_url"] == "https://www.notion.so/" + NOTION_PAGE.replace("-", "")
    body = {"domain": "KC-01", "title": "Mine now", "body": "Rewritten.", "tags": {}}
    for method, kwargs in (("PUT", {"json": body}), ("DELETE", {})):
        refused = kc.call(method, "/kc/document", params=ref, **kwargs)
        assert refused.status_code == 409, refused.text
        assert "Notion" in refused.json()["error"]["message"]
    assert kc.call("GET", "/kc/document", params=ref).json()["chunks"][0]["content"] == (
        "ZoomProp positioning."
    )
    assert audit(db, ORG) == []


def test_another_org_sees_and_touches_none_of_it(api: tuple[Api, Database]) -> None:
    kc, db = api
    write = {"domain": "KC-05", "title": "Case study", "body": "Mercy Ridge cut audit prep."}
    mine = kc.call("POST", "/kc/documents", json=write).json()
    ref = {"source": "editor", "id": mine["source_id"]}
    assert kc.call("GET", "/kc/document", params=ref, org=OTHER).status_code == 404
    edit = dict(write, body="Overwritten by another org.")
    assert kc.call("PUT", "/kc/document", params=ref, org=OTHER, json=edit).status_code == 404
    assert kc.call("DELETE", "/kc/document", params=ref, org=OTHER).status_code == 404
    notion = {"source": "notion", "id": NOTION_PAGE}
    assert kc.call("GET", "/kc/document", params=notion, org=OTHER).status_code == 404
    theirs = kc.call("GET", "/kc/domains/KC-05/documents", org=OTHER).json()
    assert theirs["documents"] == []
    hits = kc.call("GET", "/kc/domains/KC-05/search", params={"q": "audit"}, org=OTHER).json()
    assert hits["results"] == []
    counts = {
        d["domain"]: d["documents"] for d in kc.call("GET", "/kc", org=OTHER).json()["domains"]
    }
    assert set(counts.values()) == {0}
    assert kc.call("GET", "/kc/document", params=ref).json()["chunks"][0]["content"] == (
        "Mercy Ridge cut audit prep."
    )
    assert audit(db, OTHER) == []


BAD_INPUT: list[tuple[str, str, dict[str, Any], int, str]] = [
    ("GET", "/kc/domains/KC-11/documents", {}, 400, "unknown Knowledge Core domain 'KC-11'"),
    ("GET", "/kc/domains/kc-1/documents", {}, 404, "nothing at this path"),
    ("GET", "/kc/domains/KC-00/search", {"params": {"q": "x"}}, 400, "KC-00"),
    ("GET", "/kc/domains/KC-02/search", {}, 400, "search for"),
    ("GET", "/kc/domains/KC-02/search", {"params": {"q": "x", "k": "0"}}, 400, "k must"),
    ("GET", "/kc/domains/KC-02/documents", {"params": {"offset": "-1"}}, 400, "offset"),
    ("GET", "/kc/document", {"params": {"source": "web", "id": "x"}}, 400, "unknown source"),
    ("GET", "/kc/document", {"params": {"source": "editor"}}, 400, "document id"),
    ("POST", "/kc/documents", {"json": {"domain": "KC-02", "title": "t"}}, 400, "body"),
    (
        "POST",
        "/kc/documents",
        {"json": {"domain": "KC-02", "title": "t", "body": "b", "owner": "x"}},
        400,
        "owner",
    ),
    (
        "POST",
        "/kc/documents",
        {"json": {"domain": "KC-02", "title": "t", "body": "b", "tags": {"Bad Name": "v"}}},
        400,
        "tags",
    ),
    (
        "POST",
        "/kc/documents",
        {"json": {"domain": "KC-02", "title": " ", "body": "b"}},
        400,
        "title",
    ),
    ("PATCH", "/kc/document", {"params": {"source": "editor", "id": "x"}}, 405, "not allowed"),
]


def test_bad_input_is_a_clear_refusal(api: tuple[Api, Database]) -> None:
    kc, db = api
    for method, path, kwargs, status, says in BAD_INPUT:
        answer = kc.call(method, path, **kwargs)
        assert answer.status_code == status, (method, path, answer.text)
        assert says in answer.json()["error"]["message"], (method, path, answer.text)
    assert audit(db, ORG) == []  # nothing refused was written


def test_the_editor_needs_a_token_and_the_page_carries_it(api: tuple[Api, Database]) -> None:
    kc, _ = api
    assert kc.http.get(f"{kc.base}/kc").status_code == 401
    script = kc.http.get(f"{kc.base}/overview/kc.js")
    assert script.status_code == 200 and "ColonyKnowledge" in script.text
    assert script.headers["content-type"].startswith("text/javascript")
    assert '<script src="/overview/kc.js"></script>' in kc.http.get(f"{kc.base}/overview").text
