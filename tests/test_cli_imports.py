"""``colony import file|status|errors`` against the real PostgreSQL and the GCS emulator:
a file with a bad row is imported to its end, its status and error report are printed, and a
second import of the same people updates them."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from colony.local.cli import main
from tests.conftest import APP_ROLE, Gcs, PgDB

ORG = "org_cli_imports"


@pytest.fixture
def cli_env(
    testdb: PgDB, gcs: Gcs, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> PgDB:
    testdb.as_owner(
        lambda conn: (
            conn.cursor().execute("INSERT INTO organizations (id, name) VALUES (%s, 'C')", (ORG,)),
            conn.commit(),
        )
    )
    monkeypatch.setenv("COLONY_DB_MODE", "dsn")
    monkeypatch.setenv("COLONY_DB_DSN", testdb.dsn(APP_ROLE))
    monkeypatch.setenv("COLONY_EMBEDDING_DIM", str(testdb.dim))
    for name, value in gcs.env.items():
        monkeypatch.setenv(name, value)
    return testdb


def test_import_a_file_then_show_its_status_and_errors(
    cli_env: PgDB, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "apollo.csv"
    path.write_text(
        "Full Name;Email;Company;Person Linkedin Url\n"
        "Ana Lima;ana@stmary.org;St Mary;https://www.linkedin.com/in/ana\n"
        "Ben Okafor;@nope;Mercy;\n",
        encoding="utf-8",
    )
    assert main(["import", "file", ORG, str(path)]) == 0
    done = json.loads(capsys.readouterr().out)
    assert (done["status"], done["rows_created"], done["rows_rejected"]) == ("completed", 1, 1)
    assert main(["import", "status", ORG]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["id"] == done["id"] and listed["filename"] == "apollo.csv"
    assert main(["import", "errors", ORG, done["id"]]) == 0
    report = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert (
        report[1][:3] == ["2", "3", "email"] and report[1][4] == "'@nope"
    )  # escaped: a leading @ is a formula
    assert main(["import", "file", ORG, str(path)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["rows_created"], again["rows_updated"]) == (0, 1)
    assert cli_env.owner_rows("SELECT count(*) AS n FROM contacts") == [{"n": 1}]


def test_an_unknown_job_is_a_clear_error(cli_env: PgDB, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "status", ORG, "no-such-job"]) == 2
    assert "import job 'no-such-job' does not exist" in capsys.readouterr().err
