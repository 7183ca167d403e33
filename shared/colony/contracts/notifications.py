"""What a person sends to set their notifications, and what an org's admin sends to connect
the org's Slack and choose the brief's local time (issue 35 item 3)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from colony.contracts.common import Strict

NotifyKind = Literal[
    "items_waiting", "positive_reply", "negative_reply", "breaker", "import", "brief", "budget"
]
NotifyChannel = Literal["email", "slack", "off"]


class PreferencesUpdate(Strict):
    """The person's choice per kind; kinds left out keep theirs."""

    channels: dict[NotifyKind, NotifyChannel] = Field(min_length=1)


class SlackIdentity(Strict):
    """Who the person is in the org's Slack workspace (their member id, from their Slack
    profile's "Copy member ID"), and/or an incoming webhook of theirs; both null: neither."""

    slack_user_id: str | None = Field(default=None, pattern=r"^[UW][A-Z0-9]{2,20}$")
    webhook_url: str | None = Field(
        default=None, pattern=r"^https?://[^\s]{8,500}$", description="kept as a secret"
    )


class SlackConnect(Strict):
    """The org's Slack workspace and the app's bot token (kept in the secret store)."""

    team_id: str = Field(pattern=r"^T[A-Z0-9]{2,20}$")
    bot_token: str = Field(pattern=r"^xoxb-[A-Za-z0-9-]{8,200}$")


class BriefTime(Strict):
    """The org's local time the brief goes out at, ``HH:MM`` (24 hours)."""

    brief_at: str = Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
