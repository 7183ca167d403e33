"""``colony org team|members|owner|assign`` against the real PostgreSQL: the operator reads
and sets an org's team, lists its people, reassigns a prospect (audited as the admin named)
and is refused, with the reason and exit 2, for a person outside the org."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colony.local.cli import main
from colony.store.tenants import members
from tests.conftest import APP_ROLE, PgDB

ORG, OTHER = "org_cli_team", "org_cli_other"


@pytest.fixture
def cli_env(testdb: PgDB, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None) -> PgDB:
    conn = testdb.owner_connection()
    cur = conn.cursor()
    for org in (ORG, OTHER):
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    cur.execute(
        "INSERT INTO contacts (org_id, id, name, company) VALUES (%s, 'c1', 'A', 'B')", (ORG,)
    )
    conn.commit()
    conn.close()
    db = testdb.app()
    with db.transaction(ORG) as tx:
        members.join(tx, ORG, "user_ana", "org:admin", "ana@x.example", "Ana")
        members.join(tx, ORG, "user_ben", "org:member", "ben@x.example", "Ben")
    with db.transaction(OTHER) as tx:
        members.join(tx, OTHER, "user_zed", "org:admin", "zed@y.example", "Zed")
    monkeypatch.setenv("COLONY_DB_MODE", "dsn")
    monkeypatch.setenv("COLONY_DB_DSN", testdb.dsn(APP_ROLE))
    monkeypatch.setenv("COLONY_EMBEDDING_DIM", str(testdb.dim))
    return testdb


def test_the_operator_shapes_the_team_and_reassigns_with_an_audit(
    cli_env: PgDB, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "team.json"
    body.write_text(json.dumps({"time_zone": "Europe/Berlin", "backup_user_id": "user_ana"}))
    assert main(["org", "team", ORG, "--set", str(body)]) == 0
    assert json.loads(capsys.readouterr().out)["time_zone"] == "Europe/Berlin"
    body.write_text(json.dumps({"time_zone": "Europe/Atlantis"}))
    assert main(["org", "team", ORG, "--set", str(body)]) == 2
    assert "Europe/Atlantis" in capsys.readouterr().err
    assert main(["org", "members", ORG]) == 0
    listed = json.loads(capsys.readouterr().out)["members"]
    assert [m["user_id"] for m in listed] == ["user_ana", "user_ben"]
    assert main(["org", "owner", ORG, "contact", "c1", "user_ben", "--by", "user_ana"]) == 0
    assert json.loads(capsys.readouterr().out)["to"] == "user_ben"
    assert main(["org", "owner", ORG, "contact", "c1", "user_zed", "--by", "user_ana"]) == 2
    assert "user_zed" in capsys.readouterr().err
    rows = cli_env.owner_rows("SELECT owner_id FROM contacts")
    assert rows == [{"owner_id": "user_ben"}]
    audit = cli_env.owner_rows("SELECT actor, channel, action, detail FROM audit_log")
    assert audit == [
        {
            "actor": "user_ana",
            "channel": "admin",
            "action": "reassign",
            "detail": {
                "subject": "contact",
                "id": "c1",
                "from": None,
                "to": "user_ben",
                "items": 0,
            },
        }
    ]
