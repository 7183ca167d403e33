"""``bench/outbound.py`` at a small scale: its targets hold on real PostgreSQL and a real SMTP
server (the benchmark itself runs 1,000 contacts)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import KnowledgeStore
from colony.local.demo import load_demo
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB

BENCH = Path(__file__).resolve().parents[1] / "bench" / "outbound.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_outbound", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_outbound_benchmark_meets_its_targets_on_twenty_contacts(testdb: PgDB) -> None:
    bench = _bench()
    db = testdb.app()
    load_demo(db, KnowledgeStore(db, OfflineHashEmbedder()), say=lambda _: None)
    with SmtpServer() as smtp:
        result = bench.measure(
            bench.bench_deps(testdb.settings, db, smtp), smtp, 20, say=lambda _: None
        )
    # 20 contacts: 1 bounces at step 1 (5%: at, not over, the campaign's breaker threshold),
    # 2 reply and 1 unsubscribes after it, 16 get all 3
    assert (result["received"], result["expected"]) == (51, 51)
    assert result["duplicates"] == result["to_suppressed"] == result["invalid_headers"] == 0
    assert result["send_deliveries"]["duplicate"] > 0  # the extra deliveries did arrive
    assert result["ok"] is True
