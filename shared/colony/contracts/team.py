"""What an org's admin sends to shape its team (issue 35): the team settings (time zone,
brief time, named backup, escalation window, assignment rules) and a reassignment.

The rules' own shape is checked by ``colony.policy.assignment`` (a 422 naming the rule), the
time zone by ``colony.policy.local_day``, and who the people are by the flow (they must be
active people of the org)."""

from __future__ import annotations

from datetime import time
from typing import Any, Literal

from pydantic import Field

from colony.contracts.common import Strict

USER_ID = r"^[A-Za-z0-9_.:@-]+$"


class TeamSettings(Strict):
    time_zone: str = Field(default="Etc/UTC", min_length=1, max_length=64)
    brief_time: time = time(6, 0)  # local, in ``time_zone``
    backup_user_id: str | None = Field(default=None, min_length=1, max_length=128, pattern=USER_ID)
    escalate_after_hours: int | None = Field(default=None, ge=1, le=720)
    assignment: dict[str, Any] = Field(default_factory=lambda: {"rules": []})


class Reassign(Strict):
    """Give one prospect (``contact``) or deal to a person of the org."""

    subject: Literal["contact", "deal"]
    id: str = Field(min_length=1, max_length=128)
    owner: str = Field(min_length=1, max_length=128, pattern=USER_ID)
