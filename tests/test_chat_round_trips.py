"""A chat turn's database round trips, counted on the wire: at most 20 per turn.

The turn runs in-process (``run_turn``, the offline provider, the demo org) on the real
embedded PostgreSQL, every connection of its pool passing through ``CountingProxy`` (the
relay ``bench/chat.py`` counts with): each Query or Sync message the driver sends is one
round trip, measured, not estimated. A plain answer, a tool turn, a paused (gated) turn and a
turn that folds the history into its rolling summary each stay within the budget, and what
the client heard is still what the log replays.
"""

from __future__ import annotations

import pg8000.dbapi
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.flows.chat import create_session, history, run_turn
from colony.flows.chat import events as ev
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local.demo import load_demo
from colony.settings import Settings
from colony.store import Database
from colony.store import chat as chat_store
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
    # Older turns fill the history to just under its budget: the next answers take it over,
    # and the turn that does so folds it into the summary, within the same budget of trips.
    budget = llm.budgets.for_profile("AGT-001").history
    count = llm.counter.count
    with db.transaction(ORG) as cur:
        used = history.tokens(history.load(cur, session), count)
        filler = " ".join(f"deal P-{i:03d} moved to negotiation" for i in range(40))
        while used + count(filler) < budget - 60:
            chat_store.add_turn(cur, ORG, session, "turn-older", "user", filler)
            used += count(filler)
    compacted = 0
    for n in range(4):
        live = []
        before = proxy.round_trips
        run_turn(deps, ORG, "founder", session, f"Thanks ({n}), anything else?", sink=live.extend)
        trips = proxy.round_trips - before
        assert live[-1].type == "done" and live[-1].data["status"] == "completed", live[-1]
        assert trips <= MOST, f"turn {n} after the filler took {trips} round trips"
        compacted = live[-1].data["compacted"]
        if compacted:
            break
    assert compacted, "no turn took the history over its budget"
    with db.transaction(ORG) as cur:
        rows = history.load(cur, session)
    assert history.tokens(rows, count) <= budget
    assert [r.role for r in rows].count("summary") == 1
    with db.transaction(ORG) as cur:
        stored = ev.after(cur, session, 0)
    kinds = {e.type for e in stored}
    assert {"delta", "tool_call", "tool_result", "approval_required"} <= kinds
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
