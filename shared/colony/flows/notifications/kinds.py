"""What a person can be told about, the channels they can choose, and what they get when they
chose nothing: every kind by email (a digest at most hourly) but a negative reply, the
brief (only to those who asked for it) and budget alerts (only to the org's admins)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

Kind = Literal[
    "items_waiting", "positive_reply", "negative_reply", "breaker", "import", "brief", "budget"
]
Channel = Literal["email", "slack", "off"]
KINDS: tuple[str, ...] = (
    "items_waiting",
    "positive_reply",
    "negative_reply",
    "breaker",
    "import",
    "brief",
    "budget",
)
CHANNELS: tuple[str, ...] = ("email", "slack", "off")
ADMIN_ROLES = frozenset({"org:admin", "admin"})
LABELS: Mapping[str, str] = {
    "items_waiting": "Waiting for you",
    "positive_reply": "A positive reply",
    "negative_reply": "A negative reply",
    "breaker": "Circuit breaker",
    "import": "Import",
    "brief": "The brief",
    "budget": "Budget",
}


def default_channel(kind: str, role: str) -> str:
    """The channel of a kind the person made no choice for."""
    if kind in ("negative_reply", "brief"):
        return "off"
    if kind == "budget":
        return "email" if role in ADMIN_ROLES else "off"
    return "email"


def channel_for(kind: str, role: str, chosen: Mapping[str, str]) -> str:
    return chosen.get(kind) or default_channel(kind, role)
