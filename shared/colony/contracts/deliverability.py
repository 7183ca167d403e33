"""Request bodies of deliverability's routes (issue 39 item 4): the org's postal address,
and a person resuming what the circuit breaker paused."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from colony.contracts.common import Strict


class PostalAddressSet(Strict):
    """The org's postal address for its mail's footer; whether it reads as one is the
    policy's to judge (``colony.policy.postal_address``)."""

    postal_address: str = Field(min_length=1, max_length=600)


class SendingResume(Strict):
    """Resume a campaign, a sending mailbox (its address) or a sending domain the breaker
    paused (``colony.flows.outbound.breaker.resume``)."""

    kind: Literal["campaign", "mailbox", "domain"]
    target: str = Field(min_length=1, max_length=320)
