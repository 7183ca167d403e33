"""Slack: a message posted for a person, through the org's bot (the Web API's
``chat.postMessage``, to the person's Slack user) or through an incoming webhook of theirs.

The contract (``tests/conformance/test_slack.py`` holds the adapter and the fake to it):

- ``team_of`` answers the workspace a bot token was issued in;
- a message is ``text`` (what a notification shows) and Block Kit ``blocks``; the post
  answers the message's ``ts`` (a webhook has none: ``""``);
- Slack asking us to wait (429, with ``Retry-After``), a webhook that is gone or not found
  (404) and Slack not answering are ``SlackRetryLater`` (``retry_after``: Slack's seconds,
  or None); the caller decides how long and how often;
- a token Slack no longer honours (``invalid_auth``, ``token_revoked``, ``account_inactive``)
  is ``SlackTokenRevoked``: nothing posted with it can succeed until an admin connects again;
- anything else Slack refuses for good (a channel that does not exist, blocks it cannot
  read) is ``SlackRefused``, naming Slack's error code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from colony.errors import UpstreamError, ValidationFailed


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """What is posted: the fallback ``text`` and the Block Kit ``blocks``."""

    text: str
    blocks: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


class SlackRetryLater(UpstreamError):
    """Slack said wait (429), or the webhook is not found (404), or it did not answer."""

    code = "slack_retry_later"

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SlackTokenRevoked(UpstreamError):
    """The org's bot token is refused: revoked, uninstalled or the workspace gone."""

    code = "slack_token_revoked"


class SlackRefused(ValidationFailed):
    """Slack refused the message for good (its error code in the message)."""

    code = "slack_refused"


@runtime_checkable
class Slack(Protocol):
    """Posts messages to Slack."""

    def post(self, token: str, channel: str, message: SlackMessage) -> str:
        """``chat.postMessage`` with the bot ``token`` to ``channel`` (a user id: their
        direct message with the bot); the message's ``ts``."""
        ...

    def post_webhook(self, url: str, message: SlackMessage) -> str:
        """The message through an incoming webhook (the URL is a secret); ``""``."""
        ...

    def team_of(self, token: str) -> str:
        """The workspace (team id) a bot token belongs to (``auth.test``): what proves an
        org's Slack is the workspace it names. A token Slack refuses is
        ``SlackTokenRevoked``."""
        ...
