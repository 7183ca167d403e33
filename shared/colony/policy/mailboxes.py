"""A sender mailbox's limits and which mailbox takes a new contact (issue 39 item 2). Pure.

**Warm-up.** A new mailbox that sends its full volume on day one looks like a spammer to
Gmail and Outlook; reputation is built by sending a little and more each day. A mailbox's
limit on ``day`` is therefore a ramp: nothing before ``warmup_start`` (the ramp has not
begun), ``warmup_first`` on that day, then a straight line up to ``daily_limit`` reached on
day ``warmup_days`` and kept after it. Without a start (or with no ramp days) it is
``daily_limit`` from the start.

**Rotation.** A new contact goes to the ready mailbox with the most room left today (limit
less what it already sent or is sending today); ties go to the one that sent least, then by
address, so a campaign spreads its contacts evenly over mailboxes of unequal limits and the
same inputs always pick the same one. Later steps of that contact never rotate: they go
from the mailbox of its first message (``flows.outbound.senders``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from colony.errors import ValidationFailed

MAX_DAILY_LIMIT = 5000  # the migration's CHECK; Workspace allows 2,000 a day, 365 10,000
MAX_WARMUP_DAYS = 180
KINDS = ("provider", "gmail", "graph")
# A local part as mailbox providers accept one (dot-atom); the domain is checked against the
# org's verified sending domains, not here.
_LOCAL = re.compile(r"^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")


@dataclass(frozen=True, slots=True)
class Ramp:
    """A mailbox's daily limit and its warm-up."""

    daily_limit: int
    warmup_start: date | None = None
    warmup_days: int = 0
    warmup_first: int = 10

    def limit_on(self, day: date) -> int:
        """How many messages the mailbox may send on ``day``."""
        if self.warmup_start is None or self.warmup_days == 0:
            return self.daily_limit
        into = (day - self.warmup_start).days
        if into < 0:
            return 0
        if into >= self.warmup_days:
            return self.daily_limit
        first = min(self.warmup_first, self.daily_limit)
        return first + (self.daily_limit - first) * into // self.warmup_days


def check_ramp(ramp: Ramp) -> Ramp:
    """``ramp`` if every number is one a mailbox can keep; else ``ValidationFailed`` naming
    the field."""
    if not 1 <= ramp.daily_limit <= MAX_DAILY_LIMIT:
        raise ValidationFailed(f"daily_limit must be 1..{MAX_DAILY_LIMIT}, not {ramp.daily_limit}")
    if not 0 <= ramp.warmup_days <= MAX_WARMUP_DAYS:
        raise ValidationFailed(f"warmup_days must be 0..{MAX_WARMUP_DAYS}, not {ramp.warmup_days}")
    if ramp.warmup_days and not 1 <= ramp.warmup_first <= ramp.daily_limit:
        raise ValidationFailed(
            f"warmup_first must be 1..daily_limit ({ramp.daily_limit}), not {ramp.warmup_first}"
        )
    if ramp.warmup_days and ramp.warmup_start is None:
        raise ValidationFailed("warmup_days needs warmup_start, the day the ramp begins")
    return ramp


def address(text: str) -> tuple[str, str]:
    """``text`` as a mailbox address (lower-cased) and its domain; ``ValidationFailed``
    naming what is wrong with it."""
    value = text.strip().lower()
    local, at, domain = value.rpartition("@")
    if not at or not local or not domain:
        raise ValidationFailed(f"address {text[:80]!r} is not an email address")
    if len(local) > 64 or not _LOCAL.match(local):
        raise ValidationFailed(f"address {text[:80]!r} has a local part mail cannot carry")
    if len(value) > 320:
        raise ValidationFailed("address is longer than 320 characters")
    return value, domain


@dataclass(frozen=True, slots=True)
class Room:
    """A ready mailbox as rotation sees it today."""

    mailbox_id: str
    address: str
    limit: int
    used: int

    @property
    def left(self) -> int:
        return max(self.limit - self.used, 0)


def rotate(rooms: Sequence[Room]) -> Room | None:
    """The mailbox a new contact goes to (None: every one is at its limit today)."""
    open_ = [r for r in rooms if r.left > 0]
    if not open_:
        return None
    return min(open_, key=lambda r: (-r.left, r.used, r.address))
