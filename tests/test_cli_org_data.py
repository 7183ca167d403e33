"""``colony org icp|sequences|settings``: the admin API's org data operations from the CLI,
against the real PostgreSQL, through the same contracts (a file the API would refuse with a
422 is refused here, naming the field, with nothing written)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from colony.local.cli import main
from colony.store import fetch_all
from tests.conftest import APP_ROLE, PgDB
from tests.test_admin_org_data import ICP, SEQUENCES, SETTINGS

ORG = "org_cli"


@pytest.fixture
def cli_env(testdb: PgDB, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None) -> PgDB:
    conn = testdb.owner_connection()
    conn.cursor().execute("INSERT INTO organizations (id, name) VALUES (%s, 'CLI')", (ORG,))
    conn.commit()
    conn.close()
    monkeypatch.setenv("COLONY_DB_MODE", "dsn")
    monkeypatch.setenv("COLONY_DB_DSN", testdb.dsn(APP_ROLE))
    monkeypatch.setenv("COLONY_EMBEDDING_DIM", str(testdb.dim))
    return testdb


def _rows(db: PgDB, sql: str) -> list[dict]:
    conn = db.owner_connection()
    try:
        return fetch_all(conn.cursor(), sql)
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("what", "body"), [("icp", ICP), ("sequences", SEQUENCES), ("settings", SETTINGS)]
)
def test_set_then_show(
    cli_env: PgDB, tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, body: dict
) -> None:
    path = tmp_path / f"{what}.json"
    path.write_text(json.dumps(body))
    assert main(["org", what, ORG, "--set", str(path)]) == 0
    capsys.readouterr()
    assert main(["org", what, ORG]) == 0
    shown = json.loads(capsys.readouterr().out)
    if what == "icp":
        assert shown["version"] == 1 and shown["icp"]["tiers"] == ICP["tiers"]
    elif what == "sequences":
        assert {s["name"] for s in shown["sequences"]} == {s["name"] for s in body["sequences"]}
    else:
        assert shown == SETTINGS


def test_a_file_the_api_would_refuse_is_refused_naming_the_field(
    cli_env: PgDB, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**SETTINGS, "sending": {"daily_cap": 1, "per_domain_hourly": 2}}))
    assert main(["org", "settings", ORG, "--set", str(path)]) == 2
    assert "per_domain_hourly" in capsys.readouterr().err
    path.write_text("{not json")
    assert main(["org", "icp", ORG, "--set", str(path)]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert _rows(cli_env, "SELECT 1 FROM org_settings") == []
    assert _rows(cli_env, "SELECT 1 FROM icp_definitions") == []


@pytest.mark.parametrize(
    ("change", "named"),
    [({"channel": "fax"}, "channel"), ({"delay_days": -1}, "delay_days")],
)
def test_a_sequence_step_with_an_unknown_channel_or_a_negative_delay_is_refused(
    cli_env: PgDB,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, object],
    named: str,
) -> None:
    path = tmp_path / "sequences.json"
    path.write_text(json.dumps(SEQUENCES))
    assert main(["org", "sequences", ORG, "--set", str(path)]) == 0
    before = _rows(cli_env, "SELECT angle, tier, step, channel, delay_days FROM sequences")
    capsys.readouterr()
    bad = copy.deepcopy(SEQUENCES)
    bad["sequences"][0]["steps"][1].update(change)
    path.write_text(json.dumps(bad))
    assert main(["org", "sequences", ORG, "--set", str(path)]) == 2
    assert named in capsys.readouterr().err
    after = _rows(cli_env, "SELECT angle, tier, step, channel, delay_days FROM sequences")
    assert after == before  # nothing lost, nothing half-written


def test_an_unknown_org_is_an_error(cli_env: PgDB, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["org", "settings", "org_nobody"]) == 2
    assert "org_nobody" in capsys.readouterr().err
