"""``bench/outbound.py`` at a small scale: its targets hold on real PostgreSQL and a real SMTP
server (the benchmark itself runs 1,000 contacts)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.knowledge import KnowledgeStore
from colony.local.demo import load_demo
from colony.testing.smtp_server import SmtpServer
from tests.conftest import PgDB

BENCH = Path(__file__).resolve().parents[1] / "bench" / "outbound.py"


def _bench() -> ModuleType:
    """The bench, loaded by path as a script is run: its phases beside it import by name."""
    spec = importlib.util.spec_from_file_location("bench_outbound", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_outbound_benchmark_meets_its_targets_on_twenty_contacts(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCH.parent))
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
    # the deliverability phase: 20 messages, 2 recover after 421 then 451, 1 stays full
    # (452 4.2.2) until suppressed, 1 is refused by policy (550 5.7.1); caps defer the rest
    phase = result["deliverability"]
    assert phase["scripted"] == {"accepted": 16, "recovers": 2, "full": 1, "hard": 1}
    assert (phase["received"], phase["soft_recovered"], phase["retried"]) == (18, 2, 4)
    assert (phase["suppressed_soft_exhausted"], phase["suppressed_hard"]) == (1, 1)
    assert phase["by_class"] == {
        "transient:mail_system": 2,
        "transient:mailbox_full": 1,
        "permanent:policy": 1,
    }
    assert phase["bounces_classified"] == 4 and phase["deferred_by_caps"] > 0
    assert phase["senders_paused"] == 0
    assert result["lost"] == result["sent_twice"] == 0
    assert result["ok"] is True
