"""``colony research <domain>``: a company researched for an org here and now, through the
real polite and safe fetcher, from the stand-in web, into the real PostgreSQL and the GCS
emulator; each fetch printed as it happens, then what was kept. Fresh research fetches
nothing; ``--force`` asks again conditionally; ``--show`` only reads; a value that names no
company is an error naming it, with nothing fetched."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from colony.local.cli import main
from colony.testing.web_server import WebServer
from tests.conftest import APP_ROLE, Gcs, PgDB

ORG = "org_cli_research"
MERCY = "mercyridge.test"


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer(seed=9) as server:
        server.add_company(MERCY, "Mercy Ridge", jobs=[("Facilities Director", "2026-11-20")])
        yield server


@pytest.fixture
def cli_env(
    testdb: PgDB,
    gcs: Gcs,
    web: WebServer,
    monkeypatch: pytest.MonkeyPatch,
    no_ambient_config: None,
) -> WebServer:
    testdb.as_owner(
        lambda conn: (
            conn.cursor().execute("INSERT INTO organizations (id, name) VALUES (%s, 'R')", (ORG,)),
            conn.commit(),
        )
    )
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_EMBEDDING_DIM": str(testdb.dim),
        "COLONY_RESEARCH_WEB": web.research_setting(),
        **gcs.env,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return web


def test_research_a_company_then_again_then_show(
    cli_env: WebServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["research", f"https://www.{MERCY}/", "--org", ORG]) == 0
    out = capsys.readouterr().out
    assert f"researching {MERCY} for {ORG}" in out
    assert "about      ok" in out and "job_board  ok" in out  # each fetch, as it happened
    assert f"{MERCY}: pass 1 done, researched" in out
    asked = cli_env.counters().requests
    assert main(["research", MERCY, "--org", ORG]) == 0
    assert "nothing fetched" in capsys.readouterr().out
    assert cli_env.counters().requests == asked
    assert main(["research", MERCY, "--org", ORG, "--force"]) == 0
    again = capsys.readouterr().out
    assert "not_modified" in again and f"{MERCY}: pass 2 done, researched" in again
    assert cli_env.counters().not_modified > 0
    assert main(["research", MERCY, "--org", ORG, "--show"]) == 0
    shown = capsys.readouterr().out
    assert "researching" not in shown and "pass 2 done" in shown
    assert cli_env.counters().robots_violations == cli_env.counters().refused_address == 0


def test_a_value_that_names_no_company_is_refused(
    cli_env: WebServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["research", "169.254.169.254", "--org", ORG]) == 2
    assert "not a company domain" in capsys.readouterr().err
    assert cli_env.counters().requests == 0
