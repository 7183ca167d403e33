"""A chat turn's database round trips, counted on the wire: at most 20 per turn.

The turn runs in-process (``run_turn``, the offline provider, the demo org) on the real
embedded PostgreSQL, every connection of its pool passing through ``CountingProxy`` (the
relay ``bench/chat.py`` counts with): each Query or Sync message the driver sends is one
round trip, measured, not estimated. A plain answer, a tool turn and a paused (gated) turn
each stay within the budget, and what the client heard is still what the log replays.
"""

from __future__ import annotations

import pg8000.dbapi
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.flows.chat import create_session, run_turn
from colony.flows.chat import events as ev
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.demo import load_demo
from colony.settings import Settings
from colony.store import Database
from colony.store.db import parse_dsn
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.pgproxy import CountingProxy
from tests.conftest import APP_ROLE, PgDB

pytestmark = pytest.mark.covers("AGT-001", "ENT-008")

ORG = "org_zoomprop_demo"
MOST = 20  # issue 15's target, per turn
TURNS = [
    ("Good morning, what should I focus on today?", "completed"),
    ("What does our pipeline look like?", "completed"),
    ("Search the knowledge core for objections about price", "completed"),
    ("Launch a Signal campaign for T1 prospects P-001", "paused"),
    ("Thanks, anything else I should know?", "completed"),
]


def test_each_turn_takes_at_most_20_round_trips(testdb: PgDB) -> None:
    seed = testdb.app()
    load_demo(seed, KnowledgeStore(seed, OfflineHashEmbedder()), say=lambda _: None)
    proxy = CountingProxy.in_front_of(testdb.dsn(APP_ROLE))
    db = Database(lambda: pg8000.dbapi.connect(**parse_dsn(proxy.dsn)), pool_size=4)
    testdb.opened.append(db)
    settings = Settings.from_env({})
    llm = llm_from_settings(settings, db)  # its call records go through the proxy too
    deps = local_deps(
        settings, db, InlineTransport(), llm, KnowledgeStore(db, OfflineHashEmbedder())
    )
    session = create_session(deps, ORG, "founder")
    with db.transaction(ORG), db.transaction(ORG):  # both connections a turn uses, opened
        pass
    counts: list[int] = []
    for message, status in TURNS:
        live: list[ev.Event] = []
        before = proxy.round_trips
        run_turn(deps, ORG, "founder", session, message, sink=live.extend)
        counts.append(proxy.round_trips - before)
        assert live[-1].type == "done" and live[-1].data["status"] == status, live[-1]
    assert max(counts) <= MOST, f"round trips per turn: {counts}"
    with db.transaction(ORG) as cur:
        stored = ev.after(cur, session, 0)
    kinds = {e.type for e in stored}
    assert {"delta", "tool_call", "tool_result", "approval_required"} <= kinds
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
