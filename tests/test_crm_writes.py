"""What was written to the CRM under an idempotency key (``store.crm.writes.DbLedger``, the
``WriteLedger`` the HubSpot adapter is composed with), on the real PostgreSQL: the first id
kept wins, each org sees only its own keys, and a retried engagement through the adapter and
the stand-in logs one email, however many instances retry it."""

from __future__ import annotations

from pathlib import Path

from colony.adapters.hubspot import HubSpotCrm, sdk_client
from colony.ports import Engagement
from colony.store.crm.writes import DbLedger
from colony.testing.hubspot_seed import seeded_world
from colony.testing.hubspot_server import HubSpotServer
from tests.apps import org_settings
from tests.conftest import PgDB

ALPHA, BETA = "org_alpha", "org_beta"


def test_the_first_id_kept_under_a_key_wins_per_org(testdb: PgDB, tmp_path: Path) -> None:
    org_settings(testdb, tmp_path, ALPHA, BETA)
    db = testdb.app()
    alpha, beta = DbLedger(db, ALPHA), DbLedger(db, BETA)
    assert alpha.recorded("outbox:m-1") is None
    assert alpha.record("outbox:m-1", "email", "70001") == "70001"
    assert alpha.record("outbox:m-1", "email", "70002") == "70001"  # a concurrent duplicate
    assert alpha.recorded("outbox:m-1") == "70001"
    assert beta.recorded("outbox:m-1") is None  # another org's key is not seen
    assert beta.record("outbox:m-1", "email", "70009") == "70009"
    rows = testdb.owner_rows("SELECT org_id, remote_id FROM crm_writes ORDER BY org_id")
    assert rows == [{"org_id": ALPHA, "remote_id": "70001"}, {"org_id": BETA, "remote_id": "70009"}]


def test_a_retried_engagement_logs_one_email_across_instances(testdb: PgDB, tmp_path: Path) -> None:
    org_settings(testdb, tmp_path, ALPHA)
    world = seeded_world(5, contacts=3, deals=1)
    email = Engagement(
        "email", "outbox:m-7", "2026-02-02T08:00:00Z", "Hello", subject="Hi", contact_ids=("1001",)
    )
    with HubSpotServer(world) as server:
        token = server.accounts.issue(world.portal_id)["access_token"]
        first, second = (
            HubSpotCrm(sdk_client(server.url, token), DbLedger(testdb.app(), ALPHA))
            for _ in range(2)
        )
        made = first.log_engagement(email)
        again = second.log_engagement(email)  # another instance, the task retried
        assert made.created and not again.created and again.id == made.id
        assert world.count("emails") == 1
        assert [r.route for r in server.requests].count("objects.create") == 1
