"""One stage mapping (issue 36): migration 0058 re-keys 0055's write-back table,
``crm_stage_map``, by HubSpot's pipeline and stage, over rows 0055 already held, on the real
PostgreSQL; then write-back's reading (``remote_stage``, ``our_stage``) answers from what an
admin edits (``colony.flows.crm.stages.put``), the mapping the sync reads.

The tests' owner role is PostgreSQL's superuser, which RLS never scopes: 0058 lifts FORCE
for its one DELETE so that a deployer's non-superuser owner sees every org's rows too; that
part is not exercised here."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import pytest

from colony.contracts.admin import CrmStageMapping
from colony.flows.crm import stages as stage_flows
from colony.store import ensure_app_role_grants, migrate
from colony.store.crm import stages
from colony.store.db import fetch_all
from colony.store.migrations import migrations
from colony.testing.inline import InlineTransport, local_deps
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("ENT-003", "CONST-003")
DIM = 16
ALPHA, BETA = "org_alpha", "org_beta"
ONE_MAPPING = "0058_crm_sync"


def test_0055s_rows_are_kept_as_the_one_editable_mapping_write_back_reads(
    make_db: Callable[..., PgDB], monkeypatch: pytest.MonkeyPatch
) -> None:
    migrator = importlib.import_module("colony.store.migrator")
    names = [m.name for m in migrations(DIM)]
    before = names.index(ONE_MAPPING)
    testdb = make_db(dim=DIM, migrated=False)
    conn = testdb.owner_connection()
    monkeypatch.setattr(migrator, "migrations", lambda dim: migrations(dim)[:before])
    migrate(conn, dim=DIM)
    cur = conn.cursor()
    for org in (ALPHA, BETA):
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    # as 0055 keyed it (our stage): alpha put two of ours on one HubSpot stage
    for org, stage, stage_id in (
        (ALPHA, "demo", "presentationscheduled"),
        (ALPHA, "proposal", "presentationscheduled"),
        (ALPHA, "closed_won", "closedwon"),
        (BETA, "proposal", "decisionmakerboughtin"),
    ):
        cur.execute(
            "INSERT INTO crm_stage_map (org_id, provider, stage, pipeline_id, stage_id)"
            " VALUES (%s, 'hubspot', %s, 'default', %s)",
            (org, stage, stage_id),
        )
    conn.commit()

    monkeypatch.setattr(migrator, "migrations", lambda dim: migrations(dim)[: before + 1])
    assert migrate(conn, dim=DIM) == [ONE_MAPPING]  # 0058 alone, over 0055's rows
    rows = fetch_all(
        conn.cursor(),
        "SELECT org_id, pipeline_id, stage_id, stage, updated_by FROM crm_stage_map"
        " ORDER BY org_id, stage_id",
    )
    ensure_app_role_grants(conn, APP_ROLE)
    conn.close()
    # the one key 0058 could not keep: the stage write-back already read back (first by name)
    assert [(r["org_id"], r["stage_id"], r["stage"], r["updated_by"]) for r in rows] == [
        (ALPHA, "closedwon", "closed_won", "0058_crm_sync"),
        (ALPHA, "presentationscheduled", "demo", "0058_crm_sync"),
        (BETA, "decisionmakerboughtin", "proposal", "0058_crm_sync"),
    ]

    deps = local_deps(testdb.settings, testdb.app(), InlineTransport())
    with deps.db.transaction(ALPHA) as tx:
        assert stages.remote_stage(tx, "hubspot", "demo") == ("default", "presentationscheduled")
        assert stages.remote_stage(tx, "hubspot", "proposal") is None  # beta's, not alpha's
        assert stages.our_stage(tx, "hubspot", "closedwon") == "closed_won"
        assert stages.mapping(tx, "hubspot")[("default", "closedwon")] == "closed_won"

    # an admin's edit is what write-back sends and reads back from then on
    edit = {
        "stages": [
            {"pipeline_id": "default", "stage_id": "presentationscheduled", "stage": None},
            {"pipeline_id": "sales", "stage_id": "demo_booked", "stage": "demo"},
            {"pipeline_id": "default", "stage_id": "contractsent", "stage": "proposal"},
        ]
    }
    stage_flows.put(deps, ALPHA, CrmStageMapping.model_validate(edit), "u_admin")
    with deps.db.transaction(ALPHA) as tx:
        assert stages.remote_stage(tx, "hubspot", "demo") == ("sales", "demo_booked")
        assert stages.remote_stage(tx, "hubspot", "proposal") == ("default", "contractsent")
        assert stages.our_stage(tx, "hubspot", "presentationscheduled") is None
        assert stages.our_stage(tx, "hubspot", "demo_booked") == "demo"
    with deps.db.transaction(BETA) as tx:  # another org's mapping is untouched and unseen
        assert stages.remote_stage(tx, "hubspot", "demo") is None
        assert stages.remote_stage(tx, "hubspot", "proposal") == (
            "default",
            "decisionmakerboughtin",
        )
