"""Base model and the small vocabularies every contract shares."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

OutboundAngle = Literal["Signal", "Pain", "Referral", "PatternBreak", "Insight"]
SequenceTier = Literal["T1", "T2", "T3", "T4", "T5"]
# How a sequence step reaches the contact: an email we send, or a task for a person
# (a LinkedIn message or a call) with the talking points AGT-005 drafted.
SequenceChannel = Literal["email", "linkedin", "call"]
ANGLES: tuple[str, ...] = get_args(OutboundAngle)
TIERS: tuple[str, ...] = get_args(SequenceTier)
CHANNELS: tuple[str, ...] = get_args(SequenceChannel)
KcDomainId = Literal[
    "KC-01", "KC-02", "KC-03", "KC-04", "KC-05", "KC-06", "KC-07", "KC-08", "KC-09", "KC-10"
]

# An id carried in a body: never empty, never long.
ID = Field(min_length=1, max_length=200)


class Strict(BaseModel):
    """Boundary model: unknown fields are an error, instances are immutable.

    Each model's validator is built when it is first used, not when its module is imported
    (``defer_build``): a function loads every model of the contract modules it imports, and
    uses a few (issue 32 item 4)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
