"""Shared limits, shared fairly: a provider's requests and tokens per minute for a model (or a
mailbox's, a domain's sending pace) divided between the orgs that have work waiting, held
in PostgreSQL so every function instance keeps one limit (issue 38 item 1; docs/limits.md).

    acquire(limit, org, tokens) ─► the key's row, locked (colony.store.rate_limits)
        ├─ the shared bucket has room and the org's own share does ─► Grant (own)
        ├─ the shared bucket has room the other waiting orgs' shares do not claim ─► Grant
        └─ neither ─► RateWait(retry_after): a retry booked for the org, never a sleep
    the call ─► settle(grant, tokens used)  the reservation corrected to the real usage
    a provider's 429 ─► throttled(limit, retry_after)  every org's rate halved (AIMD)

The shared bucket is Inngest's account-scoped ``throttle`` (a GCRA-like bucket: ``limit`` per
``period`` with a ``burst``; work over it waits, never dropped). Per org, instead of a fixed
allowance (``key: org``), each org gets a share of that one limit (docs/limits.md says why):

* The shared bucket refills at ``use`` (95 %) of the configured rate times the AIMD
  ``factor`` and holds at most the other 5 % of a minute's limit (the burst), so no 60-second
  window of admissions ever passes the provider's limit, whichever second it starts on.
* Each org with work waiting has its own bucket, refilled at its share of that rate:
  ``capacity × weight / Σ weights of the orgs with work waiting`` (weight 1 unless its plan
  sets one), up to its share of the burst. A request is granted from the org's own bucket,
  or, when that is empty, from what the shared bucket holds beyond the other waiting orgs'
  own buckets: an org's unused share flows to the others, and an org that comes back finds
  its share waiting for it, whatever another org has queued.
* A request that is over both is refused with a booked retry time: each org's refused
  requests are spaced from a pointer kept per org, a quarter faster than the whole limit
  could serve them (``OVERBOOK``), so ten thousand waiting contacts come back as a steady
  stream, not a herd, that keeps the limit busy (an org whose competitors finish is not held
  to its old share); the surplus is refused again and booked further on.
* Tokens are reserved before a call (the prompt's count plus the output cap) and settled
  with the usage the provider reported; a bucket may run into debt for one large call, which
  later refills repay. Bookings are spaced by what calls really use (``usage_ratio``, the
  running share of a reservation settled), not by the reservation: a cap of 1,000 output
  tokens on answers of 200 would otherwise book half the limit's worth of retries.
* A 429 halves the factor (at most once per ``DECREASE_GAP``: the answers to one burst are
  one signal) and empties the shared bucket for the provider's ``Retry-After``; each quiet
  ``INCREASE_EVERY`` seconds adds ``INCREASE_STEP`` back, up to 1.

An org counts as having work waiting for ``ACTIVE_GRACE`` seconds after it asked, and until
``ACTIVE_GRACE`` after a retry booked for it. Time is the database's clock unless the limiter
is given one (``clock``; a benchmark's simulated clock, shared with its provider stand-in).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colony.errors import UpstreamError, ValidationFailed
from colony.registry.limits import LimitTable
from colony.store import rate_limits
from colony.store.db import Database

USE = 0.95  # of the configured rate; the rest of a minute's limit is the burst
ACTIVE_GRACE = 5.0  # seconds an org counts as having work waiting after it asked
FORGET_SECONDS = 600.0  # an org idle this long leaves the row (an erased org's id with it)
DECREASE_GAP = 2.0  # 429s within this of the last decrease are the same signal
INCREASE_EVERY = 10.0  # seconds without a 429 that add INCREASE_STEP to the factor
INCREASE_STEP = 0.05
FLOOR = 0.05  # the factor never falls below this
LONGEST_BOOKING = 3600.0  # a retry is never booked further ahead (redelivery's LONGEST_WAIT)
# Booked retries come back this much faster than the limit could serve them: a stream spaced
# exactly at the limit idles the bucket whenever an estimate is off or a retry finds another
# org's call took its turn (bench/fairness.py: 83 % of the limit used at 1, 95 % at 1.25). The
# surplus is refused again and booked later: one transaction each, no model call.
OVERBOOK = 1.25
RATIO_WEIGHT = 0.1  # of each settled call in the running share of its reservation used
EPS = 1e-9


class RateWait(UpstreamError):
    """A request over its org's fair share: nothing was sent. ``retry_after`` is the retry
    booked for it: the edge schedules the work again then (a Cloud Task,
    ``colony.runtime.redelivery``) and acknowledges the delivery, so it is not a failure and
    never a dead letter. ``key`` names the limit (never a prompt). Beside the limiter, as
    ``StepBusy`` is beside the steps; drawn in ``colony.errors``' tree."""

    code = "rate_wait"
    expected = True  # waiting one's turn is normal operation: one WARNING line at most

    def __init__(self, message: str, *, key: str, retry_after: float) -> None:
        super().__init__(message)
        self.key = key
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Limit:
    """One shared limit: ``key`` names what is limited (``model:gpt-4o-mini``,
    ``mailbox:<id>``, ``domain:<name>``), ``per_minute`` its requests, ``tokens_per_minute``
    its tokens (None: requests only, as for mail)."""

    key: str
    per_minute: float
    tokens_per_minute: float | None = None

    def __post_init__(self) -> None:
        if not 3 <= len(self.key) <= 300:
            raise ValidationFailed(f"limit key {self.key!r} must be 3 to 300 characters")
        if self.per_minute <= 0 or (self.tokens_per_minute or 1) <= 0:
            raise ValidationFailed(f"limit {self.key!r} must allow more than nothing a minute")


@dataclass(frozen=True, slots=True)
class Grant:
    """A request admitted: ``tokens`` reserved for it, from the org's ``own`` share or from
    what others left (``settle`` corrects the reservation to the real usage)."""

    limit: Limit
    org_id: str
    tokens: int
    own: bool
    at: float


class Limiter:
    """Admits requests against shared limits, state in PostgreSQL (module docstring).

    ``clock``: seconds, the one every caller of a key shares (None: the database's)."""

    def __init__(self, db: Database, clock: Callable[[], float] | None = None) -> None:
        self._db = db
        self._clock = clock

    def acquire(
        self,
        limit: Limit,
        org_id: str,
        *,
        tokens: int = 0,
        weight: float = 1.0,
        urgent: bool = False,
    ) -> Grant:
        """Admit one request of ``org_id`` reserving ``tokens``, or raise ``RateWait``;
        ``urgent`` (a person waiting) is always admitted, charged to the org (``decide``)."""
        return self.acquire_all([limit], org_id, tokens=tokens, weight=weight, urgent=urgent)[0]

    def acquire_all(
        self,
        limits: Sequence[Limit],
        org_id: str,
        *,
        tokens: int = 0,
        weight: float = 1.0,
        urgent: bool = False,
    ) -> list[Grant]:
        """Admit one request under every one of ``limits`` at once (a message: its mailbox's
        pace and its domain's), or none: ``RateWait`` until the latest of their bookings.

        The rows are locked in key order, so two callers of overlapping limits cannot
        deadlock. A refusal keeps what the refusing limits booked; the limits that would have
        granted are left as they were, so a refused message uses no mailbox's turn."""
        if weight <= 0:
            raise ValidationFailed(f"an org's weight must be positive, not {weight!r}")
        ordered = sorted(limits, key=lambda limit: limit.key)
        if len({limit.key for limit in ordered}) != len(ordered):
            raise ValidationFailed("each limit may be named once")
        grants: list[Grant] = []
        refused: list[tuple[Limit, float]] = []
        with self._db.transaction(None) as cur:
            decided = []
            for limit in ordered:
                state, now = self._lock(cur, limit)
                granted, own, retry_at = decide(
                    state, limit, org_id, tokens, weight, now, urgent=urgent
                )
                decided.append((limit, state, granted))
                if granted:
                    grants.append(Grant(limit, org_id, tokens, own, now))
                else:
                    refused.append((limit, retry_at - now))
            for limit, state, granted in decided:
                if not refused or not granted:
                    rate_limits.save(cur, limit.key, state)
        if refused:
            limit, wait = max(refused, key=lambda pair: pair[1])
            wait = max(wait, 0.0)
            raise RateWait(
                f"{limit.key} is over this org's share now; retry in {wait:.2f} s",
                key=limit.key,
                retry_after=wait,
            )
        return grants

    def settle(self, grant: Grant, tokens_used: int) -> None:
        """Correct the reservation of ``grant`` to the ``tokens_used`` the provider reported."""
        change = grant.tokens - tokens_used
        if change == 0 or grant.limit.tokens_per_minute is None:
            return
        with self._db.transaction(None) as cur:
            state, now = self._lock(cur, grant.limit)
            forward(state, grant.limit, now)
            state["tokens"] = min(state["tokens"] + change, burst(state, grant.limit)[1])
            if grant.tokens > 0:  # how much of a reservation calls use, for the bookings
                used = max(tokens_used, 1) / grant.tokens
                state["usage_ratio"] = (1 - RATIO_WEIGHT) * state[
                    "usage_ratio"
                ] + RATIO_WEIGHT * used
            org = state["orgs"].get(grant.org_id)
            if grant.own and org is not None:
                org["t"] += change
            rate_limits.save(cur, grant.limit.key, state)

    def throttled(self, limit: Limit, retry_after: float | None) -> float:
        """A provider's 429 for ``limit``: every org's rate lowered; the factor now."""
        with self._db.transaction(None) as cur:
            state, now = self._lock(cur, limit)
            forward(state, limit, now)
            decrease(state, limit, now, retry_after)
            rate_limits.save(cur, limit.key, state)
        return float(state["factor"])

    def state(self, limit: Limit) -> dict[str, Any] | None:
        """The key's row as stored (None: never used)."""
        with self._db.transaction(None) as cur:
            row = rate_limits.read(cur, limit.key)
        return None if row is None else dict(row)

    def _lock(self, cur: Any, limit: Limit) -> tuple[dict[str, Any], float]:
        given = self._clock() if self._clock is not None else None
        full_requests, full_tokens = _burst(limit, 1.0)
        row = rate_limits.lock(
            cur,
            limit.key,
            per_minute=limit.per_minute,
            tokens_per_minute=limit.tokens_per_minute,
            requests=full_requests,
            tokens=full_tokens,
            now=given,
        )
        state = dict(row)
        now = float(given if given is not None else state.pop("db_now"))
        state.pop("db_now", None)
        state["orgs"] = dict(state["orgs"] or {})
        state["per_minute"] = limit.per_minute  # the configuration may have changed
        state["tokens_per_minute"] = limit.tokens_per_minute
        return state, now


def sending_limits(table: LimitTable, *, mailbox: str, domain: str) -> list[Limit]:
    """The limits one message is sent under: its mailbox's pace and its domain's (where the
    limits file sets them; ``colony.registry.limits``). Mail counts requests, not tokens."""
    limits = []
    for kind, name in (("mailbox", mailbox), ("domain", domain.lower())):
        rate = table.sending.get(kind)
        if rate is not None:
            limits.append(Limit(f"{kind}:{name}", rate.per_minute))
    return limits


def rates(state: Mapping[str, Any], limit: Limit) -> tuple[float, float]:
    """Requests and tokens per second the shared bucket refills at now."""
    factor = float(state["factor"]) * USE / 60.0
    tokens = (limit.tokens_per_minute or 0.0) * factor
    return limit.per_minute * factor, tokens


def _burst(limit: Limit, factor: float) -> tuple[float, float]:
    requests = max(1.0, (1.0 - USE) * limit.per_minute * factor)
    tokens = (1.0 - USE) * (limit.tokens_per_minute or 0.0) * factor
    return requests, tokens


def burst(state: Mapping[str, Any], limit: Limit) -> tuple[float, float]:
    """What the shared bucket holds at most now (requests, tokens)."""
    return _burst(limit, float(state["factor"]))


def forward(state: dict[str, Any], limit: Limit, now: float) -> None:
    """Bring the shared bucket and the AIMD factor forward to ``now``."""
    factor = float(state["factor"])
    if factor < 1.0:
        since = max(state["decreased_at"] or -math.inf, state["increased_at"] or -math.inf)
        windows = math.floor((now - since) / INCREASE_EVERY) if since > -math.inf else 1
        if windows >= 1:
            state["factor"] = min(1.0, factor + windows * INCREASE_STEP)
            state["increased_at"] = now
    per_request, per_token = rates(state, limit)
    cap_requests, cap_tokens = burst(state, limit)
    elapsed = max(0.0, now - float(state["at"]))
    state["requests"] = min(cap_requests, state["requests"] + per_request * elapsed)
    state["tokens"] = min(cap_tokens, state["tokens"] + per_token * elapsed)
    state["at"] = max(float(state["at"]), now)


def decrease(state: dict[str, Any], limit: Limit, now: float, retry_after: float | None) -> None:
    """The multiplicative decrease, and nothing granted for the provider's ``retry_after``."""
    state["throttled"] += 1
    last = state["decreased_at"]
    if last is None or now - last >= DECREASE_GAP:
        state["factor"] = max(FLOOR, float(state["factor"]) * 0.5)
        state["decreased_at"] = state["increased_at"] = now
    per_request, per_token = rates(state, limit)
    hold = retry_after if retry_after is not None and retry_after > 0 else 1.0
    state["requests"] = min(state["requests"], -per_request * hold)
    if limit.tokens_per_minute is not None:
        state["tokens"] = min(state["tokens"], -per_token * hold)


def decide(
    state: dict[str, Any],
    limit: Limit,
    org_id: str,
    tokens: int,
    weight: float,
    now: float,
    *,
    urgent: bool = False,
) -> tuple[bool, bool, float]:
    """Whether ``org_id``'s request is granted now, from its own share, and if not when its
    booked retry is. Changes ``state`` as the decision does (the caller saves it).

    ``urgent`` (a person waiting on the answer) is granted whatever the buckets hold, charged
    to the org's own share and the shared bucket, into debt if need be: the org's waiting
    work goes later by as much; other orgs keep their shares (the shared bucket's one
    request is refilled in 1/rate seconds)."""
    forward(state, limit, now)
    orgs: dict[str, dict[str, float]] = state["orgs"]
    for name in [n for n, o in orgs.items() if o["seen"] < now - FORGET_SECONDS]:
        del orgs[name]
    asker = orgs.get(org_id)
    if asker is None or asker["until"] <= now:  # back with work: its share starts full
        asker = orgs[org_id] = {"r": math.inf, "t": math.inf, "at": now, "slot": now}
    asker.update(w=weight, seen=now, until=max(asker.get("until", now), now + ACTIVE_GRACE))
    active = {name: o for name, o in orgs.items() if o["until"] > now}
    total = sum(o["w"] for o in active.values())
    per_request, per_token = rates(state, limit)
    cap_requests, cap_tokens = burst(state, limit)
    for o in active.values():
        share = o["w"] / total
        elapsed = max(0.0, now - o["at"])
        o["r"] = min(cap_requests * share, o["r"] + per_request * share * elapsed)
        o["t"] = min(cap_tokens * share, o["t"] + per_token * share * elapsed)
        o["at"] = max(o["at"], now)
    counted = limit.tokens_per_minute is not None
    share = asker["w"] / total
    # a call larger than a bucket holds goes when the bucket is full, into debt
    own_tokens = min(tokens, cap_tokens * share)
    all_tokens = min(tokens, cap_tokens)
    fits = state["requests"] >= 1 - EPS and (not counted or state["tokens"] >= all_tokens - EPS)
    own = asker["r"] >= 1 - EPS and (not counted or asker["t"] >= own_tokens - EPS)
    others_r = sum(max(o["r"], 0.0) for n, o in active.items() if n != org_id)
    others_t = sum(max(o["t"], 0.0) for n, o in active.items() if n != org_id)
    spare = state["requests"] - others_r >= 1 - EPS and (
        not counted or state["tokens"] - others_t >= all_tokens - EPS
    )
    if urgent or (fits and (own or spare)):
        own = own or urgent
        state["requests"] -= 1
        asker["r"] -= 1 if own else 0
        if counted:
            state["tokens"] -= tokens
            asker["t"] -= tokens if own else 0
        state["granted"] += 1
        return True, own, now
    waits = [(1 - state["requests"]) / per_request, (1 - asker["r"]) / (per_request * share)]
    if counted and per_token > 0:
        waits.append((all_tokens - state["tokens"]) / per_token)
        waits.append((own_tokens - asker["t"]) / (per_token * share))
    wait = max(0.0, min(max(waits), LONGEST_BOOKING))
    retry_at = min(max(now + wait, asker["slot"]), now + LONGEST_BOOKING)
    spacing = 1 / per_request  # a stream as fast as the whole limit, in what calls really use
    if counted and per_token > 0:
        spacing = max(spacing, tokens * min(float(state["usage_ratio"]), 1.0) / per_token)
    asker["slot"] = retry_at + spacing / OVERBOOK
    asker["until"] = max(asker["until"], retry_at + ACTIVE_GRACE)
    state["waited"] += 1
    return False, False, retry_at
