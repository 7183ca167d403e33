"""Which CRM record is which of ours (``store.crm.links``) on the real PostgreSQL: a link is
found both ways, a later ``updatedAt`` wins and an earlier one does not move it back, and
another org's links are not found at all (RLS)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from colony.store.crm import links
from tests.apps import org_settings
from tests.conftest import PgDB

ALPHA, BETA = "org_alpha", "org_beta"
EARLY, LATE = datetime(2026, 1, 5, 9, tzinfo=UTC), datetime(2026, 1, 6, 9, tzinfo=UTC)


def test_links_are_found_both_ways_and_updated_at_only_moves_forward(
    testdb: PgDB, tmp_path: Path
) -> None:
    org_settings(testdb, tmp_path, ALPHA, BETA)
    db = testdb.app()
    with db.transaction(ALPHA) as cur:
        links.link(cur, ALPHA, "hubspot", "deal", "9001", "deal-a", LATE)
        links.link(cur, ALPHA, "hubspot", "deal", "9001", None, EARLY)  # an older event
        links.link(cur, ALPHA, "hubspot", "company", "5001", None, EARLY)
    with db.transaction(ALPHA) as cur:
        deal = links.for_entity(cur, "hubspot", "deal", "deal-a")
        assert deal is not None and deal.remote_id == "9001" and deal.live
        assert deal.remote_updated_at == LATE and deal.entity_id == "deal-a"
        company = links.for_remote(cur, "hubspot", "company", "5001")
        assert company is not None and company.entity_id is None
        assert links.for_remote(cur, "hubspot", "contact", "9001") is None  # type matters
    with db.transaction(BETA) as cur:
        assert links.for_entity(cur, "hubspot", "deal", "deal-a") is None
        assert links.for_remote(cur, "hubspot", "deal", "9001") is None
