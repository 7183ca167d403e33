"""One portal's limit shared by the sync and write-back across instances (issue 36 item 4):
two ``HubSpotAccess`` objects stand for two instances of the crm function on the same real
PostgreSQL, one running the org's backfill page by page, the other reading deal-update cards
and writing approved updates back, all through the official client against the HubSpot
stand-in. A request over the portal's count is not made: the task says how long to wait and
is queued again after it (nothing sleeps); the stand-in's request log never holds more than
our 100 in any rolling 10 seconds, so HubSpot never answers 429.

The stand-in's clock starts half a second into a second: a count kept per whole second that
ignored the second a rolling window starts in would let through up to twice the burst here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from colony.flows.crm import backfill, deal_writes, outgoing
from colony.flows.crm.pushes import CrmParts
from colony.flows.pipeline import deals
from colony.runtime.crm_access import HubSpotAccess
from colony.runtime.deps import set_deps_for_tests
from colony.testing.hubspot_accounts import ManualClock, peak
from colony.testing.hubspot_seed import seeded_world
from colony.testing.hubspot_server import HubSpotServer
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import org_settings
from tests.conftest import PgDB
from tests.crm_world import ALPHA, CrmWorld
from tests.test_crm_connect import Clock, hubspot_env

pytestmark = pytest.mark.covers("fn:crm")
CARDS = 30
DONE = -1.0


def test_a_backfill_and_write_backs_share_one_count_across_two_instances(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> None:
    portal = seeded_world(3, portal_id="101", companies=200, contacts=5000, deals=200)
    clock = ManualClock(1_000.5)
    with HubSpotServer(portal, clock=clock) as hubspot:
        admitted: list[float] = []
        refused: list[float] = []
        take = hubspot.accounts.take

        def counted(*args: Any, **kwargs: Any) -> Any:
            over = take(*args, **kwargs)
            (refused if over else admitted).append(clock())
            return over

        monkeypatch.setattr(hubspot.accounts, "take", counted)
        settings = org_settings(testdb, tmp_path, ALPHA, **hubspot_env(hubspot))
        transport = InlineTransport()
        deps = local_deps(settings, testdb.app(), transport, clock=Clock())
        set_deps_for_tests(deps)
        try:
            world = CrmWorld(
                testdb, tmp_path, hubspot, {ALPHA: portal}, deps, transport, None, monkeypatch
            )
            world.connect(ALPHA)
            ours = [world.seed(ALPHA, n)[1] for n in range(CARDS)]  # linked to 9001 + n
            sync = HubSpotAccess(deps, clock=clock)  # instance one: the backfill
            pushing = HubSpotAccess(deps, clock=clock)  # instance two: write-back
            parts = CrmParts(secrets=pushing.secrets, auth=pushing.auth, connect=pushing.connect)
            job = backfill.start(deps, ALPHA, "u-admin", schedule=False)["id"]
            cards = [
                deals.propose_deal_update(deps, ALPHA, d, {"value": 70000 + n})
                for n, d in enumerate(ours)
            ]
            waits: list[float] = []

            def turn(one: Any, two: Any) -> None:
                """Each instance takes one step (None: it moved on; a number: it waits that
                long; DONE: nothing left). Neither moved on: the clock moves on by the shorter
                wait (a task's delay), else by a quarter second."""
                held = [w for w in (one(), two()) if w != DONE]
                if held and None not in held:
                    waits.append(min(held))
                    clock.advance(min(held))
                else:
                    clock.advance(0.25)

            def sync_step() -> float | None:
                row = backfill.run_job(deps, sync, ALPHA, job, pages=1, schedule=False)
                return row.get("waiting_seconds") if row["status"] != "completed" else DONE

            unread = list(cards)

            def read_step() -> float | None:
                if not unread:
                    return DONE
                answer = deal_writes.read_card(deps, parts, ALPHA, unread[0])
                if answer["status"] == "waiting":
                    return float(answer["waiting_seconds"])
                assert answer["status"] == "read", answer
                unread.pop(0)
                return None

            while unread:
                turn(sync_step, read_step)
            for card in cards:
                assert world.decide(card, "approve").status_code == 200
            pushes = [r["id"] for r in testdb.owner_rows("SELECT id FROM crm_pushes ORDER BY id")]
            assert len(pushes) == CARDS
            unwritten = list(pushes)

            def push_step() -> float | None:
                if not unwritten:
                    return DONE
                answer = outgoing.run(deps, parts, ALPHA, unwritten[0])
                if "waiting_seconds" in answer:
                    assert answer["status"] == "queued"
                    return float(answer["waiting_seconds"])
                assert answer["status"] == "written", answer
                unwritten.pop(0)
                return None

            while unwritten or backfill.latest(deps, ALPHA)["status"] != "completed":
                turn(sync_step, push_step)
        finally:
            set_deps_for_tests(None)

    # everything was done, by both instances, on one count
    assert backfill.latest(deps, ALPHA)["rows_done"] == 5400
    written = {p.id: p.properties["amount"] for p in portal.live("deals") if int(p.id) < 9031}
    assert written == {str(9001 + n): f"{70000 + n}.00" for n in range(CARDS)}
    one, two = sync.limits["101"].taken, pushing.limits["101"].taken
    assert two == 3 * CARDS  # each card's read, then each write's read and PATCH
    assert one > 100 and one + two == len(admitted)  # every request counted, once
    assert waits, "the shared limit never held anyone back: the test proves nothing"
    assert refused == []  # HubSpot never had to say 429
    assert peak(admitted) <= 100
    # the waits were the limiter's, handed to the queue: the write-back's tasks after them
    delayed = [t for n, t in transport.tasks.items() if "-limit-" in n]
    assert delayed and all(t.delay_seconds >= 1 for t in delayed)
