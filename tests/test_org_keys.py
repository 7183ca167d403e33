"""Migration 0033 on the real PostgreSQL: org_id into every org-scoped key and foreign key
(issue 16 item 4), applied over a database that already holds two orgs' rows in every
org-scoped table (tests/erasure_seed.py)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import pytest

from colony.store import migrate
from colony.store.db import fetch_all, fetch_value
from colony.store.migrations import migrations
from colony.testing.fakes import MemoryBlobStore
from tests.conftest import PgDB
from tests.erasure_seed import dump, seed_org

pytestmark = pytest.mark.covers("ENT-001", "ENT-002", "ENT-003", "ENT-012")
DIM = 16
ALPHA, BETA = "org_alpha", "org_beta"
OWN_KEYS = "0033_org_keys"


def test_the_rekeying_keeps_every_row_and_refuses_a_reference_across_orgs(
    make_db: Callable[..., PgDB], monkeypatch: pytest.MonkeyPatch
) -> None:
    migrate_module = importlib.import_module("colony.store.migrate")
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
    monkeypatch.setattr(migrate_module, "migrations", migrations)
    assert migrate(conn, dim=DIM)[0] == OWN_KEYS
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
