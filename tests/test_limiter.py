"""The shared limiter on the real embedded PostgreSQL (issue 38 item 1): one limit held across
instances, fair weighted shares, a 429 slowing every org, refused work booked (not slept)
and no org starved.

Real parts: PostgreSQL (each "instance" its own pool and connections), the limiter's SQL.
Time is a clock the test moves (``SimClock``), shared by every instance as the database's clock
is in production: nothing sleeps, and every figure is exact for the times the test chose.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from colony.errors import ValidationFailed
from colony.registry.limits import LimitTable, Rate
from colony.runtime.limiter import (
    ACTIVE_GRACE,
    OVERBOOK,
    USE,
    Limit,
    Limiter,
    RateWait,
    sending_limits,
)
from colony.testing.quota_model import SimClock
from tests.conftest import PgDB

MODEL = Limit("model:gpt-4o-mini", per_minute=600, tokens_per_minute=200_000)


START = 1_000.0  # the seconds the clock starts at, as if the database had run for a while


def granted(
    limiter: Limiter, limit: Limit, org: str, *, tokens: int = 0, weight: float = 1.0
) -> bool:
    try:
        limiter.acquire(limit, org, tokens=tokens, weight=weight)
    except RateWait:
        return False
    return True


def test_two_instances_share_one_limit(testdb: PgDB) -> None:
    clock = SimClock(START)
    instances = [Limiter(testdb.app(), clock), Limiter(testdb.app(), clock)]
    wins: Counter[int] = Counter()
    start = threading.Barrier(2)

    def ask(n: int) -> None:
        start.wait()  # both instances ask at once, each on its own connections
        for _ in range(40):
            wins[n] += granted(instances[n], MODEL, "org_a")

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # the burst is 5 % of a minute's 600: 30 between both, however the asks interleaved
    assert sum(wins.values()) == 30
    clock.now += 2.0  # 2 s at 95 % of 600 a minute refill 19 requests
    more = sum(granted(instances[n % 2], MODEL, "org_a") for n in range(40))
    assert more == 19


def test_tokens_are_reserved_then_settled(testdb: PgDB) -> None:
    clock = SimClock(START)
    limiter = Limiter(testdb.app(), clock)
    limit = Limit("model:tokens", per_minute=6_000, tokens_per_minute=60_000)  # burst 3,000
    first = limiter.acquire(limit, "org_a", tokens=2_000)
    assert not granted(limiter, limit, "org_a", tokens=2_000)  # 1,000 left of the burst
    limiter.settle(first, 500)  # it used 500: 1,500 come back
    assert granted(limiter, limit, "org_a", tokens=2_000)
    state = limiter.state(limit)
    assert state is not None and state["tokens"] == pytest.approx(500.0)


def shares(
    limiter: Limiter, clock: SimClock, weights: dict[str, float], seconds: float
) -> Counter[str]:
    """Every org asks for all it can every 50 ms for ``seconds``; grants per org."""
    wins: Counter[str] = Counter()
    for tick in range(int(seconds / 0.05)):
        clock.now += 0.05
        order = list(weights) if tick % 2 else list(reversed(weights))  # nobody always first
        for org in order:
            while granted(limiter, MODEL, org, weight=weights[org]):
                wins[org] += 1
    return wins


def test_weighted_fair_shares_between_three_orgs(testdb: PgDB) -> None:
    clock = SimClock(START)
    limiter = Limiter(testdb.app(), clock)
    weights = {"org_a": 1.0, "org_b": 2.0, "org_c": 3.0}
    shares(limiter, clock, weights, 5.0)  # past the first burst
    wins = shares(limiter, clock, weights, 30.0)
    capacity = 600 * USE / 60 * 30  # 285 in 30 s
    assert sum(wins.values()) == pytest.approx(capacity, rel=0.03)
    for org, weight in weights.items():  # capacity × weight / Σ weights
        assert wins[org] == pytest.approx(capacity * weight / 6.0, rel=0.08), wins


def test_unused_share_flows_to_the_org_with_work(testdb: PgDB) -> None:
    clock = SimClock(START)
    limiter = Limiter(testdb.app(), clock)
    assert granted(limiter, MODEL, "org_idle")  # it had work once
    clock.now += ACTIVE_GRACE + 1  # and none since: its share is not held for it
    wins = shares(limiter, clock, {"org_busy": 1.0}, 20.0)
    # the whole rate for 20 s, and the burst the bucket refilled to while nobody asked
    assert wins["org_busy"] == pytest.approx(600 * USE / 60 * 20 + 29, abs=2)


def test_a_429_halves_everyones_rate_then_it_recovers(testdb: PgDB) -> None:
    clock = SimClock(START)
    limiter = Limiter(testdb.app(), clock)
    weights = {"org_a": 1.0, "org_b": 1.0}
    shares(limiter, clock, weights, 5.0)  # past the first burst
    before = shares(limiter, clock, weights, 20.0)
    whole = 600 * USE / 60  # 9.5 a second, half each
    assert before == {
        "org_a": pytest.approx(whole * 10, abs=2),
        "org_b": pytest.approx(whole * 10, abs=2),
    }
    assert limiter.throttled(MODEL, 1.0) == 0.5  # one org's call was answered 429
    assert limiter.throttled(MODEL, 1.0) == 0.5  # the same burst's other 429s: one signal
    clock.now += 1.0  # the provider's Retry-After: nothing was granted to anyone
    after = shares(limiter, clock, weights, 9.0)  # inside the first quiet window
    for org in weights:  # both orgs slowed, not only the one whose call was refused
        assert after[org] == pytest.approx(whole / 2 * 9 / 2, abs=2), (before, after)
    state = limiter.state(MODEL)
    assert state is not None and state["throttled"] == 2
    clock.now += 10 * 10  # ten quiet windows add 0.05 each: back to the whole rate
    shares(limiter, clock, weights, 0.05)
    state = limiter.state(MODEL)
    assert state is not None and state["factor"] == pytest.approx(1.0)


def test_refused_work_is_booked_as_a_stream_not_a_herd(testdb: PgDB) -> None:
    clock = SimClock(START)
    limiter = Limiter(testdb.app(), clock)
    waits = []
    for _ in range(100):  # a launch: 100 contacts at once
        try:
            limiter.acquire(MODEL, "org_big")
        except RateWait as wait:
            waits.append(wait.retry_after)
    assert len(waits) == 70  # the burst went at once; the rest are booked
    assert waits == sorted(waits) and len(set(waits)) == 70  # one slot each
    spacing = 60 / (600 * USE) / OVERBOOK  # the whole rate, overbooked: it may get all of it
    assert waits[-1] - waits[0] == pytest.approx(69 * spacing, rel=0.01)


def test_no_org_starves_behind_a_large_backlog(testdb: PgDB) -> None:
    """A large org with thousands booked, a small one arriving later: each retry comes back at
    the time it was booked for, as Cloud Tasks would bring it."""
    clock = SimClock(START)
    limiter = Limiter(testdb.app(), clock)
    due: list[tuple[float, int, str]] = [(clock.now, n, "org_big") for n in range(3_000)]
    due += [(clock.now + 10.0, 10_000 + n, "org_small") for n in range(40)]
    done: dict[str, list[float]] = {"org_big": [], "org_small": []}
    while due and clock.now < 1_200:
        due.sort()
        at, n, org = due.pop(0)
        clock.now = max(clock.now, at)
        try:
            limiter.acquire(MODEL, org)
        except RateWait as wait:
            due.append((clock.now + wait.retry_after, n, org))
            continue
        done[org].append(clock.now)
    assert len(done["org_small"]) == 40  # all of the small org's work went
    # at its half share of 9.5 a second, at the least: 40 in under 40 / 4.75 s (and a burst)
    assert max(done["org_small"]) - 1_010.0 < 40 / (600 * USE / 60 / 2)
    served = [t for t in done["org_big"] if 1_010.0 <= t <= max(done["org_small"])]
    assert served  # the large org kept going meanwhile: shared, not handed over


def test_bad_limits_and_weights_are_refused(testdb: PgDB) -> None:
    limiter = Limiter(testdb.app(), SimClock(START))
    with pytest.raises(ValidationFailed, match="more than nothing"):
        Limit("model:x", per_minute=0)
    with pytest.raises(ValidationFailed, match="weight"):
        limiter.acquire(MODEL, "org_a", weight=0)


def test_a_message_goes_under_its_mailbox_and_its_domain_or_under_neither(testdb: PgDB) -> None:
    clock = SimClock(START)
    limiter = Limiter(testdb.app(), clock)
    table = LimitTable(sending={"mailbox": Rate(6), "domain": Rate(60)})  # bursts of 1 and 3
    first = sending_limits(table, mailbox="mbx_1", domain="Acme.example")
    assert [limit.key for limit in first] == ["mailbox:mbx_1", "domain:acme.example"]
    assert len(limiter.acquire_all(first, "org_a")) == 2
    with pytest.raises(RateWait) as waited:  # the mailbox's pace: one message per 10.5 s
        limiter.acquire_all(first, "org_a")
    assert waited.value.key == "mailbox:mbx_1"
    assert waited.value.retry_after == pytest.approx(60 / (6 * USE), rel=0.01)
    domain = limiter.state(first[1])
    assert domain is not None and domain["granted"] == 1  # the refused message took no turn
    second = sending_limits(table, mailbox="mbx_2", domain="acme.example")
    assert len(limiter.acquire_all(second, "org_a")) == 2  # another mailbox, the same domain
    assert sending_limits(LimitTable(), mailbox="mbx_1", domain="acme.example") == []


def test_a_person_waiting_is_admitted_and_their_org_pays_for_it(testdb: PgDB) -> None:
    clock = SimClock(START)
    limiter = Limiter(testdb.app(), clock)
    while granted(limiter, MODEL, "org_busy"):  # its campaign took the whole burst
        pass
    with pytest.raises(RateWait) as before:
        limiter.acquire(MODEL, "org_busy")
    limiter.acquire(MODEL, "org_busy", urgent=True)  # its chat turn: admitted all the same
    with pytest.raises(RateWait) as after:
        limiter.acquire(MODEL, "org_busy")
    # the turn is charged to the org: its own next request is booked later than before it
    assert after.value.retry_after > before.value.retry_after
    clock.now += 1.0  # a second's refill: another org finds its own share whole
    assert sum(granted(limiter, MODEL, "org_other") for _ in range(8)) == 8
