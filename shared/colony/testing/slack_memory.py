"""The ``Slack`` port in memory: what a test posts is kept in ``posted``; tokens and webhooks
are issued, revoked and rate limited here as the stand-in does, and what the adapter would
refuse is refused the same way (``tests/conformance/test_slack.py`` holds both to the port)."""

from __future__ import annotations

import secrets as random
from collections import deque
from dataclasses import dataclass, field

from colony.ports.slack import SlackMessage, SlackRefused, SlackRetryLater, SlackTokenRevoked
from colony.testing.slack_server import blocks_problem


@dataclass
class MemorySlack:
    posted: list[tuple[str, SlackMessage]] = field(default_factory=list)
    _tokens: dict[str, bool] = field(default_factory=dict)  # token → revoked
    _teams: dict[str, str] = field(default_factory=dict)  # token → team
    _hooks: set[str] = field(default_factory=set)
    _limits: deque[int] = field(default_factory=deque)

    def bot_token(self, team_id: str) -> str:
        token = f"xoxb-{team_id}-{random.token_hex(12)}"
        self._tokens[token] = False
        self._teams[token] = team_id
        return token

    def team_of(self, token: str) -> str:
        revoked = self._tokens.get(token)
        if revoked is None or revoked:
            code = "invalid_auth" if revoked is None else "token_revoked"
            raise SlackTokenRevoked(f"Slack refused the bot token ({code})")
        return self._teams[token]

    def revoke(self, token: str) -> None:
        self._tokens[token] = True

    def webhook_url(self, team_id: str) -> str:
        url = f"memory://hooks/{team_id}/{random.token_hex(12)}"
        self._hooks.add(url)
        return url

    def remove_webhook(self, url: str) -> None:
        self._hooks.discard(url)

    def rate_limit(self, times: int = 1, retry_after: int = 1) -> None:
        self._limits.extend([retry_after] * times)

    def _check(self, message: SlackMessage) -> None:
        if self._limits:
            raise SlackRetryLater("Slack asked us to wait (429)", float(self._limits.popleft()))
        if not message.text and not message.blocks:
            raise SlackRefused("Slack refused the message (no_text)")
        if blocks_problem([dict(b) for b in message.blocks] or None) is not None:
            raise SlackRefused("Slack refused the message (invalid_blocks)")

    def post(self, token: str, channel: str, message: SlackMessage) -> str:
        if self._limits:  # Slack's limiter answers before it reads the token
            raise SlackRetryLater("Slack asked us to wait (429)", float(self._limits.popleft()))
        revoked = self._tokens.get(token)
        if revoked is None or revoked:
            code = "invalid_auth" if revoked is None else "token_revoked"
            raise SlackTokenRevoked(f"Slack refused the org's bot token ({code})")
        self._check(message)
        self.posted.append((channel, message))
        return f"{len(self.posted)}.000001"

    def post_webhook(self, url: str, message: SlackMessage) -> str:
        if self._limits:
            raise SlackRetryLater("Slack asked us to wait (429)", float(self._limits.popleft()))
        if url not in self._hooks:
            raise SlackRetryLater("the Slack webhook answered 404 (no_service)")
        self._check(message)
        self.posted.append((f"webhook:{url}", message))
        return ""
