"""``colony crm hubspot …``: the operator connects an org to HubSpot from the command line,
through the same flows as the admin API, against the real PostgreSQL and the HubSpot
stand-in; what it prints is JSON, never a token."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from colony.local.cli import main
from colony.testing.hubspot_seed import seeded_world
from colony.testing.hubspot_server import HubSpotServer
from tests.apps import org_settings
from tests.conftest import APP_ROLE, PgDB

ORG = "org_cli"


def test_the_operator_connects_shows_and_disconnects_hubspot(
    testdb: PgDB,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_ambient_config: None,
) -> None:
    org_settings(testdb, tmp_path, ORG)
    with HubSpotServer(seeded_world(4, portal_id="303")) as hubspot:
        env = {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_EMBEDDING_DIM": str(testdb.dim),
            "COLONY_DATA_DIR": str(tmp_path),
            "COLONY_HUBSPOT_BASE_URL": hubspot.url,
            "COLONY_HUBSPOT_AUTH_URL": hubspot.authorize_url,
            "COLONY_HUBSPOT_CLIENT_ID": hubspot.accounts.client_id,
            "COLONY_HUBSPOT_CLIENT_SECRET": hubspot.accounts.client_secret,
            "COLONY_HUBSPOT_REDIRECT_URI": "https://colony.example/crm/callback",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        assert main(["crm", "hubspot", "connect", ORG, "--as", "user_ops"]) == 0
        url = json.loads(capsys.readouterr().out)["authorize_url"]
        hubspot.consent_as("303")
        back = parse_qs(urlsplit(httpx.get(url).headers["location"]).query)
        code, state = back["code"][0], back["state"][0]
        assert (
            main(
                [
                    "crm",
                    "hubspot",
                    "callback",
                    ORG,
                    "--as",
                    "someone_else",
                    f"--code={code}",
                    f"--state={state}",
                ]
            )
            == 2
        )
        assert "start connecting HubSpot again" in capsys.readouterr().err
        assert main(["crm", "hubspot", "connect", ORG, "--as", "user_ops"]) == 0
        url = json.loads(capsys.readouterr().out)["authorize_url"]
        back = parse_qs(urlsplit(httpx.get(url).headers["location"]).query)
        # with "=": an authorization code is opaque and may start with "-"
        args = [f"--code={back['code'][0]}", f"--state={back['state'][0]}"]
        assert main(["crm", "hubspot", "callback", ORG, "--as", "user_ops", *args]) == 0
        printed = capsys.readouterr().out
        assert json.loads(printed)["status"] == "connected" and back["code"][0] not in printed
        assert main(["crm", "hubspot", "status", ORG]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert (shown["account_id"], shown["connected_by"]) == ("303", "user_ops")
        # a stage mapped, the backfill run here to its end; deals of other stages kept apart
        assert main(["crm", "hubspot", "map", ORG, "default", "closedwon", "closed_won"]) == 0
        mapped = json.loads(capsys.readouterr().out)
        assert [(m["stage_id"], m["stage"]) for m in mapped["stages"]] == [
            ("closedwon", "closed_won")
        ]
        assert main(["crm", "hubspot", "map", ORG, "default", "closedwon", "won"]) == 2
        capsys.readouterr()
        assert main(["crm", "hubspot", "backfill", ORG, "--as", "user_ops"]) == 0
        job = json.loads(capsys.readouterr().out)
        world = hubspot.world("303")
        won = sum(1 for d in world.live("deals") if d.properties["dealstage"] == "closedwon")
        assert (job["status"], job["rows_done"], job["rows_rejected"]) == (
            "completed",
            130,
            10 - won,
        )
        assert main(["crm", "hubspot", "stages", ORG]) == 0
        waiting = json.loads(capsys.readouterr().out)["unmapped"]
        assert sum(w["deals"] for w in waiting) == 10 - won
        assert main(["crm", "hubspot", "disconnect", ORG, "--as", "user_ops"]) == 0
        assert json.loads(capsys.readouterr().out)["status"] == "disconnected"
        assert list((tmp_path / "secrets").glob("*")) == []
