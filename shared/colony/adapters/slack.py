"""The ``Slack`` port over the official ``slack_sdk``: ``WebClient.chat_postMessage`` with the
org's bot token, ``WebhookClient.send`` for a person's incoming webhook.

Neither client retries here (``retry_handlers=[]``): a 429's ``Retry-After`` can be minutes,
far longer than a request may wait, so it goes back to the caller as ``SlackRetryLater``
and the notification is tried again when Slack said (``colony.flows.notifications``).
Nothing the SDK raises carries the token or the webhook URL into our errors: only Slack's
error code and the HTTP status.
"""

from __future__ import annotations

import urllib.error
from typing import Any

from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web import WebClient
from slack_sdk.webhook import WebhookClient

from colony.ports.slack import (
    SlackMessage,
    SlackRefused,
    SlackRetryLater,
    SlackTokenRevoked,
)

TIMEOUT_SECONDS = 10
REVOKED = frozenset({"invalid_auth", "token_revoked", "account_inactive", "not_authed"})
API_URL = "https://slack.com/api/"


def _retry_after(headers: Any) -> float | None:
    for name, value in dict(headers or {}).items():
        if str(name).lower() == "retry-after":
            value = value[0] if isinstance(value, list) else value
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                return None
    return None


class SlackAdapter:
    """Posts through ``api_url`` (Slack's, or a stand-in's ``…/api/``)."""

    def __init__(self, api_url: str | None = None, *, timeout: int = TIMEOUT_SECONDS) -> None:
        self.api_url = api_url or API_URL
        self.timeout = timeout

    def post(self, token: str, channel: str, message: SlackMessage) -> str:
        client = WebClient(
            token=token, base_url=self.api_url, timeout=self.timeout, retry_handlers=[]
        )
        try:
            answer = client.chat_postMessage(
                channel=channel, text=message.text, blocks=[dict(b) for b in message.blocks]
            )
        except SlackApiError as error:
            response = error.response
            code = str(response.get("error") or "") if isinstance(response.data, dict) else ""
            status = int(response.status_code)
            if status == 429 or code == "ratelimited":
                wait = _retry_after(response.headers)
                raise SlackRetryLater("Slack asked us to wait (429)", wait) from None
            if code in REVOKED:
                raise SlackTokenRevoked(f"Slack refused the org's bot token ({code})") from None
            if status >= 500:
                raise SlackRetryLater(f"Slack answered {status}") from None
            raise SlackRefused(f"Slack refused the message ({code or status})") from None
        except (SlackRequestError, urllib.error.URLError, OSError) as error:
            raise SlackRetryLater(f"Slack could not be reached ({type(error).__name__})") from None
        return str(answer.get("ts") or "")

    def team_of(self, token: str) -> str:
        client = WebClient(
            token=token, base_url=self.api_url, timeout=self.timeout, retry_handlers=[]
        )
        try:
            answer = client.auth_test()
        except SlackApiError as error:
            response = error.response
            code = str(response.get("error") or "") if isinstance(response.data, dict) else ""
            if int(response.status_code) == 429:
                raise SlackRetryLater(
                    "Slack asked us to wait (429)", _retry_after(response.headers)
                ) from None
            if code in REVOKED:
                raise SlackTokenRevoked(f"Slack refused the bot token ({code})") from None
            raise SlackRetryLater(
                f"Slack answered auth.test with {code or response.status_code}"
            ) from None
        except (SlackRequestError, urllib.error.URLError, OSError) as error:
            raise SlackRetryLater(f"Slack could not be reached ({type(error).__name__})") from None
        return str(answer.get("team_id") or "")

    def post_webhook(self, url: str, message: SlackMessage) -> str:
        client = WebhookClient(url, timeout=self.timeout, retry_handlers=[])
        try:
            answer = client.send(text=message.text, blocks=[dict(b) for b in message.blocks])
        except (urllib.error.URLError, OSError) as error:
            raise SlackRetryLater(f"Slack could not be reached ({type(error).__name__})") from None
        status, body = int(answer.status_code), str(answer.body or "")[:80]
        if status == 200:
            return ""
        if status == 429:
            raise SlackRetryLater("Slack asked us to wait (429)", _retry_after(answer.headers))
        if status == 404 or status >= 500:  # a webhook removed, or Slack down: try later
            raise SlackRetryLater(f"the Slack webhook answered {status} ({body})")
        if status in (401, 403) or body in REVOKED:
            raise SlackTokenRevoked(f"the Slack webhook refused us ({status}: {body})")
        raise SlackRefused(f"the Slack webhook refused the message ({status}: {body})")
