"""The people of an org (``store.tenants.members``) on the real PostgreSQL: a person joins,
changes role, leaves and comes back; only active people are listed; another org's people
are not found at all (RLS)."""

from __future__ import annotations

from pathlib import Path

from colony.store.tenants import members
from tests.apps import org_settings
from tests.conftest import PgDB

ALPHA, BETA = "org_alpha", "org_beta"


def test_people_join_leave_and_come_back_within_their_org(testdb: PgDB, tmp_path: Path) -> None:
    org_settings(testdb, tmp_path, ALPHA, BETA)
    db = testdb.app()
    with db.transaction(ALPHA) as cur:
        members.join(cur, ALPHA, "user_ana", "org:admin", "ana@alpha.example", "Ana")
        members.join(cur, ALPHA, "user_ben", "org:member", "ben@alpha.example", "Ben")
        members.join(cur, ALPHA, "user_ben", "org:admin", "ben@alpha.example", "Ben")
    with db.transaction(ALPHA) as cur:
        assert members.leave(cur, "user_ana")
        assert not members.leave(cur, "user_ana")  # already gone
        assert not members.leave(cur, "user_nobody")
        assert [(m.user_id, m.role) for m in members.active(cur)] == [("user_ben", "org:admin")]
        ana = members.get(cur, "user_ana")
        assert ana is not None and not ana.active and ana.left_at is not None
    with db.transaction(BETA) as cur:
        assert members.active(cur) == [] and members.get(cur, "user_ben") is None
        assert not members.leave(cur, "user_ben")  # another org's person is not touched
    with db.transaction(ALPHA) as cur:
        members.join(cur, ALPHA, "user_ana", "org:member", "ana@alpha.example", "Ana")
        assert [m.user_id for m in members.active(cur)] == ["user_ana", "user_ben"]
        back = members.get(cur, "user_ana")
        assert back is not None and back.active and back.left_at is None
