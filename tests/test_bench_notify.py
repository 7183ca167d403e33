"""``bench/notify.py`` at a small scale: its targets hold on real PostgreSQL, the SMTP server
and the Slack stand-in (the benchmark itself runs 10 orgs × 20 people and 5,000 events)."""

from __future__ import annotations

import argparse
import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from colony.adapters.secrets import FileSecrets
from colony.adapters.smtp import SmtpSender
from colony.settings import Settings
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.slack_server import SlackServer
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB

BENCH = Path(__file__).resolve().parents[1] / "bench" / "notify.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_notify", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_notify_benchmark_meets_its_targets_on_three_orgs(
    testdb: PgDB, tmp_path: Path, smtp: SmtpServer
) -> None:
    bench = _bench()
    args = argparse.Namespace(
        orgs=3, members=8, events=150, days=3, seed=7, brief_start="2026-10-23T00:00:00"
    )
    clock = bench.Clock(datetime(2026, 10, 20, 13, tzinfo=UTC))
    env = {
        "COLONY_MAIL_FROM": "Colony <team@colony.example>",
        "COLONY_FUNCTION_URLS": json.dumps({"chat": "https://colony.example"}),
    }
    with SlackServer() as slack:
        deps = local_deps(
            Settings.from_env(env),
            testdb.app(),
            InlineTransport(),
            sender=SmtpSender(smtp.host, smtp.port, starttls=False, timeout=10),
            secrets=FileSecrets(tmp_path / "secrets"),
            clock=clock,
        )
        result = bench.measure(args, deps, clock, smtp, slack)
    assert result["ok"], result
    assert result["missed"] == result["duplicates"] == 0
    assert result["expected"] == result["delivered"] > 0
    assert result["brief_dst_orgs"] == 3  # Berlin, London and Lisbon change on 25 October
    assert result["brief_delivered"] == result["brief_expected"] > 0
