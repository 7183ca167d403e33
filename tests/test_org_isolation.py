"""CONST-003 proven from outside the repositories: raw SQL as the application role."""

import pytest

from colony.errors import OrgScopeError
from colony.knowledge import ChunkIn, KnowledgeStore
from colony.store.db import fetch_all, fetch_value
from colony.testing.fakes import CountingEmbedder
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("CONST-003", "ENT-001")


@pytest.fixture
def two_orgs(testdb: PgDB) -> PgDB:
    db = testdb.app()
    for org in ("org_a", "org_b"):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
            cur.execute(
                "INSERT INTO contacts (org_id, name, company) VALUES (%s, %s, %s)",
                (org, f"{org} person", f"{org} co"),
            )
    return testdb


def test_unfiltered_query_sees_only_the_scoped_org(two_orgs: PgDB) -> None:
    db = two_orgs.app()
    with db.transaction("org_a") as cur:
        rows = fetch_all(cur, "SELECT org_id, name FROM contacts")
        orgs = fetch_all(cur, "SELECT id FROM organizations")
    assert rows == [{"org_id": "org_a", "name": "org_a person"}]
    assert orgs == [{"id": "org_a"}]


def test_no_scope_sees_nothing(two_orgs: PgDB) -> None:
    with two_orgs.app().transaction(None) as cur:
        assert fetch_all(cur, "SELECT * FROM contacts") == []
        assert fetch_all(cur, "SELECT * FROM organizations") == []


def test_writing_another_orgs_row_fails(two_orgs: PgDB) -> None:
    db = two_orgs.app()
    with pytest.raises(OrgScopeError), db.transaction("org_a") as cur:
        cur.execute(
            "INSERT INTO contacts (org_id, name, company) VALUES ('org_b', 'intruder', 'x')"
        )
    with pytest.raises(OrgScopeError), db.transaction("org_a") as cur:
        cur.execute("UPDATE contacts SET org_id = 'org_b'")
    with db.transaction("org_a") as cur:
        cur.execute("UPDATE contacts SET name = 'hijacked' WHERE org_id = 'org_b'")
        assert cur.rowcount == 0
        cur.execute("DELETE FROM contacts WHERE org_id = 'org_b'")
        assert cur.rowcount == 0
    with db.transaction("org_b") as cur:
        assert fetch_all(cur, "SELECT name FROM contacts") == [{"name": "org_b person"}]


def test_scope_does_not_leak_into_the_next_pooled_transaction(two_orgs: PgDB) -> None:
    db = two_orgs.app()
    with db.transaction("org_a") as cur:
        assert len(fetch_all(cur, "SELECT * FROM contacts")) == 1
    with db.transaction(None) as cur:  # same pooled connection, no scope
        assert fetch_all(cur, "SELECT * FROM contacts") == []
        setting = fetch_value(cur, "SELECT current_setting('app.org_id', true)")
        assert setting in (None, "")


def test_empty_org_id_is_refused_before_any_query(two_orgs: PgDB) -> None:
    with pytest.raises(OrgScopeError), two_orgs.app().transaction("  "):
        pass


def test_knowledge_retrieval_never_crosses_orgs(two_orgs: PgDB) -> None:
    store = KnowledgeStore(two_orgs.app(), CountingEmbedder())
    text = "ZoomProp cut clinic lease costs by 18 percent at Mercy Ridge"
    store.sync_source("org_a", "seed", "doc-a", [ChunkIn("KC-05", text)])
    store.sync_source("org_b", "seed", "doc-b", [ChunkIn("KC-05", text + " (org b copy)")])
    hits = store.retrieve("org_a", text, ["KC-05"], k_per_domain=5)["KC-05"]
    assert [h.source_id for h in hits] == ["doc-a"]
    vector = CountingEmbedder().embed([text])[0]
    assert len(vector) == 1536
    hits_b = store.retrieve("org_b", vector, ["KC-05"], 5, model="offline-hash-v1")["KC-05"]
    assert [h.source_id for h in hits_b] == ["doc-b"]
