"""Migration 0033 on the real PostgreSQL: org_id into every org-scoped key and foreign key
(issue 16 item 4), applied over a database that already holds two orgs' rows in every
org-scoped table (tests/erasure_seed.py)."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

import pytest

from colony.store import migrate
from colony.store.db import fetch_all, fetch_value
from colony.store.knowledge import notion_workspaces
from colony.store.migrations import migrations
from colony.testing.fakes import MemoryBlobStore
from tests.conftest import PgDB, wait_for
from tests.erasure_seed import dump, seed_org

pytestmark = pytest.mark.covers("ENT-001", "ENT-002", "ENT-003", "ENT-012")
DIM = 16
ALPHA, BETA = "org_alpha", "org_beta"
OWN_KEYS = "0033_org_keys"


def test_the_rekeying_keeps_every_row_and_refuses_a_reference_across_orgs(
    make_db: Callable[..., PgDB], monkeypatch: pytest.MonkeyPatch
) -> None:
    migrate_module = importlib.import_module("colony.store.migrator")
    names = [m.name for m in migrations(DIM)]
    before_0033 = names.index(OWN_KEYS)
    testdb = make_db(dim=DIM, migrated=False)
    conn = testdb.owner_connection()
    monkeypatch.setattr(migrate_module, "migrations", lambda dim: migrations(dim)[:before_0033])
    migrate(conn, dim=DIM)
    blobs = MemoryBlobStore()
    alpha = seed_org(conn, blobs, ALPHA, DIM)
    beta = seed_org(conn, blobs, BETA, DIM)
    conn.commit()
    rows_before = {org: dump(conn, org) for org in (ALPHA, BETA)}
    # 0033 alone: a later migration may add columns, which would change every row's dump
    monkeypatch.setattr(
        migrate_module, "migrations", lambda dim: migrations(dim)[: before_0033 + 1]
    )
    assert migrate(conn, dim=DIM) == [OWN_KEYS]
    assert {org: dump(conn, org) for org in (ALPHA, BETA)} == rows_before
    cur = conn.cursor()
    # no validation was skipped: every foreign key is checked again from here on
    assert fetch_value(cur, "SELECT count(*) FROM pg_constraint WHERE NOT convalidated") == 0
    conn.commit()

    # a row of one org can no longer point at another org's row (the old keys allowed it)
    deal = fetch_value(cur, "SELECT id FROM deals WHERE org_id = %s LIMIT 1", (ALPHA,))
    with pytest.raises(Exception, match="deals_contact_id_fkey"):
        cur.execute("UPDATE deals SET contact_id = %s WHERE id = %s", (beta.dana, deal))
    conn.rollback()
    cur.execute("UPDATE deals SET contact_id = %s WHERE id = %s", (alpha.other, deal))
    conn.commit()

    # ON DELETE SET NULL empties the reference only, never org_id (replies.deal_id)
    cur.execute(
        "INSERT INTO deals (org_id, name, stage) VALUES (%s, 'gone', 'lost') RETURNING id",
        (ALPHA,),
    )
    gone = cur.fetchone()[0]
    cur.execute(
        "INSERT INTO replies (org_id, outbox_id, contact_id, deal_id, message_id, body,"
        " sentiment) SELECT org_id, id, contact_id, %s, 'm-0033', 'b', 'unknown' FROM outbox"
        " WHERE org_id = %s LIMIT 1 RETURNING id",
        (gone, ALPHA),
    )
    reply = cur.fetchone()[0]
    cur.execute("DELETE FROM deals WHERE id = %s", (gone,))
    assert fetch_all(cur, "SELECT org_id, deal_id FROM replies WHERE id = %s", (reply,)) == [
        {"org_id": ALPHA, "deal_id": None}
    ]
    conn.commit()
    conn.close()


def test_two_orgs_claiming_one_notion_workspace_at_once_leave_it_to_the_first(
    testdb: PgDB,
) -> None:
    """The key is (org, workspace) now, so the database no longer refuses a second org: the
    claim's lock and its look at other orgs' rows must, even when both claims overlap."""
    conn = testdb.owner_connection()
    conn.cursor().execute(
        "INSERT INTO organizations (id, name) VALUES (%s, 'a'), (%s, 'b')", (ALPHA, BETA)
    )
    conn.commit()
    conn.close()
    db = testdb.app()
    mapping = {"a" * 32: "KC-01"}
    holding, beta_result = threading.Event(), []

    def beta_claims() -> None:
        holding.wait(timeout=30)
        with db.transaction(BETA) as cur:
            beta_result.append(notion_workspaces.connect(cur, BETA, "ws-x", "s-b", mapping))

    beta = threading.Thread(target=beta_claims)
    beta.start()
    with db.transaction(ALPHA) as cur:
        assert notion_workspaces.connect(cur, ALPHA, "ws-x", "s-a", mapping)
        holding.set()
        # beta is now waiting on the workspace's lock (its claim cannot have finished)
        wait_for(
            lambda: testdb.owner_rows(
                "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ),
            what="beta's claim waiting on the workspace lock",
        )
        assert beta_result == []
    beta.join(timeout=30)
    assert beta_result == [False]
    with db.transaction(BETA) as cur:
        assert notion_workspaces.get(cur, "ws-x") is None  # the route setting did not linger
    owners = testdb.owner_rows("SELECT org_id FROM notion_workspaces WHERE workspace_id = 'ws-x'")
    assert owners == [{"org_id": ALPHA}]
