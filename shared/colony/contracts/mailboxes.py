"""What the admin API (and the CLI) accept for an org's sender mailboxes (issue 39 item 2):
a new mailbox, a change to one, and the OAuth callback that connects an API mailbox. Shapes
and bounds only; whether the address is on a verified sending domain of the org, and whether
the ramp's numbers agree, is the flow's to judge (``flows.outbound.mailboxes``)."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import Field, SecretStr, StringConstraints

from colony.contracts.common import Strict

DisplayName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=1, max_length=120, pattern=r"^[^\r\n<>\"]+$"
    ),
]
Limit = Annotated[int, Field(ge=1, le=5000)]
# A person of the org (a Clerk user id); whether they are one, and still active, is the flow's
UserId = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=128)]


class MailboxAdd(Strict):
    """A mailbox the org's mail is to go from: its address, the name recipients see, how
    mail leaves it (``provider``: the deployment's relay, DKIM-signed with the domain's key;
    ``gmail`` / ``graph``: the org's own Google Workspace / Microsoft 365 mailbox, connected
    through OAuth), its daily limit, its warm-up ramp, and the person it belongs to
    (``user_id``; none: the team's)."""

    address: str = Field(min_length=3, max_length=320)
    display_name: DisplayName
    kind: Literal["provider", "gmail", "graph"] = "provider"
    daily_limit: Limit
    warmup_start: date | None = None
    warmup_days: int = Field(default=0, ge=0, le=180)
    warmup_first: Limit = 10
    user_id: UserId | None = None


class MailboxChange(Strict):
    """What an admin may change on a mailbox (its address and kind are its identity);
    ``user_id`` null gives it back to the team."""

    display_name: DisplayName | None = None
    daily_limit: Limit | None = None
    warmup_start: date | None = None
    warmup_days: int | None = Field(default=None, ge=0, le=180)
    warmup_first: Limit | None = None
    status: Literal["active", "paused"] | None = None
    user_id: UserId | None = None


class MailboxCallback(Strict):
    """What the provider's redirect handed the person's browser, posted back by our page
    with the person's own session (credentials of a kind: never echoed or logged)."""

    code: SecretStr = Field(min_length=1, max_length=2048)
    state: SecretStr = Field(min_length=1, max_length=200)
