"""``colony org usage``: what an org spent in a month, from the CLI, against the real
PostgreSQL: the same report the chat function's ``/usage`` serves, as JSON or as lines a
person reads, with the budget an admin set through ``colony org settings``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colony.local.cli import main
from colony.observability.call_records import CallRecorder
from colony.ports import LlmCallRecord
from colony.store import Database
from tests.conftest import PgDB
from tests.test_admin_org_data import SETTINGS
from tests.test_cli_org_data import ORG, cli_env  # noqa: F401  (the fixture)


def spend(db: Database, org: str, dollars: int, **record: Any) -> None:
    """Record calls worth ``dollars`` (each 400,000 gpt-4o input tokens: $1.00)."""
    base = {"agent_id": "AGT-010", "run_id": None, "model": "gpt-4o"}
    call = LlmCallRecord(
        org,
        kc_domains_queried=(),
        tokens_in=400_000,
        tokens_out=0,
        latency_ms=1.0,
        **{**base, **record},
    )
    recorder = CallRecorder(db)
    for _ in range(dollars):
        recorder.record(call)


def test_usage_as_json_and_as_lines(
    cli_env: PgDB,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({**SETTINGS, "budget": {"monthly_usd": 4, "alert_share": 0.5}}))
    assert main(["org", "settings", ORG, "--set", str(settings)]) == 0
    db = cli_env.app()
    spend(db, ORG, 3, agent_id="AGT-004")
    spend(db, ORG, 1, agent_id="AGT-001", model="house-model")
    capsys.readouterr()

    assert main(["org", "usage", "--org", ORG, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["org_id"] == ORG
    assert (report["total"]["calls"], report["total"]["cost_usd"]) == (4, 3.0)
    assert report["budget"]["state"] == "alert" and report["budget"]["share"] == 0.75
    assert [a["kind"] for a in report["alerts"]] == ["soft"]

    assert main(["org", "usage", "--org", ORG]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{ORG} · ") and lines[0].endswith("· 4 model calls · $3")
    assert lines[1].startswith("budget: $4 a month, alert at 50%, hard cap; spent 75.0%")
    assert "past the alert share" in lines[1]
    assert lines[2].startswith("unpriced calls: 1, of house-model (1)")
    assert lines[3].startswith("alert: soft at $2 of $4")
    assert "by agent" in lines and "by campaign" in lines and "by day" in lines
    agent = next(line for line in lines if "AGT-004 Qualification" in line)
    assert agent.split()[-1] == "$3" and " 3 calls" in agent

    assert main(["org", "usage", "--org", ORG, "--month", "2020-01", "--json"]) == 0
    past = json.loads(capsys.readouterr().out)
    assert past["total"]["calls"] == 0 and past["budget"] is None
    assert main(["org", "usage", "--org", ORG, "--month", "January"]) == 2
    assert "YYYY-MM" in capsys.readouterr().err
    assert main(["org", "usage", "--org", "org_nobody"]) == 2
    assert "org_nobody" in capsys.readouterr().err
