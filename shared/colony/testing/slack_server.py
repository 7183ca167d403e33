"""A local stand-in for Slack: the Web API's ``chat.postMessage`` and incoming webhooks, for
the official ``slack_sdk`` (``WebClient(base_url=<api_url>)``, ``WebhookClient(<url>)``), and
Slack's interactive requests to us, signed as Slack signs them.

What it checks as Slack does: the bot token (``Authorization: Bearer xoxb-…``: one it issued,
else ``invalid_auth``; one revoked with ``revoke``, ``token_revoked``), the message's shape
(``channel``; ``text`` or ``blocks``; each block a known type, a section's text an
``mrkdwn``/``plain_text`` object of at most 3,000 characters, an actions block's buttons with
a plain-text label, an ``action_id`` and a value of at most 2,000 characters or a URL: else
``invalid_blocks``), at most 50 blocks. A webhook it did not issue answers 404
``no_service``. ``rate_limit`` answers the next requests 429 with ``Retry-After`` (the Web
API with ``{"ok": false, "error": "ratelimited"}``, a webhook with ``rate_limited``).
What was posted is in ``posted`` (channel or webhook, text, blocks), once per accepted post.
"""

from __future__ import annotations

import json
import secrets as random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from colony.slack_signing import signature
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route

SIGNING_SECRET = "slack-stand-in-signing-secret-0123456789"
BLOCK_TYPES = frozenset({"section", "actions", "context", "divider", "header"})
TEXT_TYPES = frozenset({"mrkdwn", "plain_text"})


@dataclass(frozen=True)
class Posted:
    """One message Slack accepted: where (a channel, or ``webhook:<id>``), text, blocks."""

    to: str
    text: str
    blocks: list[dict[str, Any]]
    team_id: str


def _block_problem(block: Any) -> str | None:
    if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
        return "a block of an unknown type"
    kind = block["type"]
    if kind in ("section", "header"):
        text = block.get("text")
        if not isinstance(text, dict) or text.get("type") not in TEXT_TYPES:
            return f"a {kind} without a text object"
        if not isinstance(text.get("text"), str) or not 0 < len(text["text"]) <= 3000:
            return f"a {kind}'s text is empty or over 3000 characters"
        if kind == "header" and text["type"] != "plain_text":
            return "a header's text must be plain_text"
    if kind == "actions":
        elements = block.get("elements")
        if not isinstance(elements, list) or not 0 < len(elements) <= 25:
            return "an actions block without elements"
        for button in elements:
            label = button.get("text") if isinstance(button, dict) else None
            if button.get("type") != "button" or not isinstance(label, dict):
                return "an action that is not a button with a label"
            if label.get("type") != "plain_text" or not 0 < len(str(label.get("text"))) <= 75:
                return "a button label must be plain_text of 1 to 75 characters"
            if not button.get("action_id") or len(str(button.get("value", ""))) > 2000:
                return "a button needs an action_id and a value of at most 2000 characters"
            if "url" in button and not str(button["url"]).startswith(("http://", "https://")):
                return "a button url must be http(s)"
    if kind == "context" and (not isinstance(block.get("elements"), list) or not block["elements"]):
        return "a context block without elements"
    return None


def blocks_problem(blocks: Any) -> str | None:
    """Why Slack would refuse these blocks (None: it would take them)."""
    if blocks is None:
        return None
    if not isinstance(blocks, list) or len(blocks) > 50:
        return "blocks must be a list of at most 50"
    return next((p for b in blocks if (p := _block_problem(b)) is not None), None)


class SlackServer(ProviderServer):
    """Slack on 127.0.0.1: ``api_url`` for ``WebClient``, ``webhook_url()`` for webhooks."""

    unauthorised = ("not_authed", "No authentication token provided.")
    rate_limited = ("ratelimited", "Rate limited.")

    def __init__(self, signing_secret: str = SIGNING_SECRET) -> None:
        self.signing_secret = signing_secret
        self.posted: list[Posted] = []
        self._tokens: dict[str, tuple[str, bool]] = {}  # token → (team, revoked)
        self._hooks: dict[str, str] = {}  # hook path → team
        self._lock = threading.Lock()
        super().__init__(
            routes=[
                Route.of("slack.chat.postMessage", "POST", r"/api/chat\.postMessage", self._post),
                Route.of("slack.auth.test", "POST", r"/api/auth\.test", self._auth_test),
                Route.of("slack.webhook", "POST", r"/services/(?P<hook>[A-Za-z0-9/]+)", self._hook),
            ]
        )

    # -- what Slack issues ----------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    def bot_token(self, team_id: str) -> str:
        """A new bot token of the workspace ``team_id``, as installing the app issues one."""
        token = f"xoxb-{team_id}-{random.token_hex(12)}"
        with self._lock:
            self._tokens[token] = (team_id, False)
        return token

    def revoke(self, token: str) -> None:
        with self._lock:
            self._tokens[token] = (self._tokens[token][0], True)

    def webhook_url(self, team_id: str) -> str:
        """A new incoming webhook of ``team_id`` (its URL is its secret)."""
        path = f"{team_id}/B{random.token_hex(4).upper()}/{random.token_hex(12)}"
        with self._lock:
            self._hooks[path] = team_id
        return f"{self.base_url}/services/{path}"

    def remove_webhook(self, url: str) -> None:
        with self._lock:
            self._hooks.pop(url.split("/services/", 1)[1], None)

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        return Reply(status, {"ok": False, "error": code})

    def rate_limit(self, times: int = 1, retry_after: int = 1) -> None:
        """The next ``times`` requests answered 429 with ``Retry-After: retry_after``."""

        def limited(request: RecordedRequest) -> Reply:
            headers = {"Retry-After": str(retry_after)}
            if request.route == "slack.webhook":
                return Reply(429, b"rate_limited", headers)
            return Reply(429, {"ok": False, "error": "ratelimited"}, headers)

        self.script(*[limited] * times)

    # -- the Web API and webhooks -----------------------------------------------------------

    def _post(self, request: RecordedRequest) -> Reply:
        auth = request.header("authorization") or ""
        if not auth.startswith("Bearer "):
            return Reply(200, {"ok": False, "error": "not_authed"})
        with self._lock:
            known = self._tokens.get(auth.removeprefix("Bearer "))
        if known is None:
            return Reply(200, {"ok": False, "error": "invalid_auth"})
        team, revoked = known
        if revoked:
            return Reply(200, {"ok": False, "error": "token_revoked"})
        body = request.body if isinstance(request.body, dict) else {}
        channel = body.get("channel")
        if not isinstance(channel, str) or not channel:
            return Reply(200, {"ok": False, "error": "channel_not_found"})
        if not body.get("text") and not body.get("blocks"):
            return Reply(200, {"ok": False, "error": "no_text"})
        if blocks_problem(body.get("blocks")) is not None:
            return Reply(200, {"ok": False, "error": "invalid_blocks"})
        ts = f"{time.time():.6f}"
        with self._lock:
            self.posted.append(
                Posted(channel, str(body.get("text") or ""), list(body.get("blocks") or []), team)
            )
        return Reply(200, {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}})

    def _auth_test(self, request: RecordedRequest) -> Reply:
        auth = request.header("authorization") or ""
        with self._lock:
            known = self._tokens.get(auth.removeprefix("Bearer ")) if auth else None
        if known is None:
            return Reply(200, {"ok": False, "error": "invalid_auth"})
        team, revoked = known
        if revoked:
            return Reply(200, {"ok": False, "error": "token_revoked"})
        return Reply(200, {"ok": True, "team_id": team, "team": team.lower(), "bot_id": "B0BOT"})

    def _hook(self, request: RecordedRequest) -> Reply:
        path = request.params["hook"]
        with self._lock:
            team = self._hooks.get(path)
        if team is None:
            return Reply(404, b"no_service")
        body = request.body if isinstance(request.body, dict) else None
        if body is None:
            return Reply(400, b"invalid_payload")
        if not body.get("text") and not body.get("blocks"):
            return Reply(400, b"no_text")
        if blocks_problem(body.get("blocks")) is not None:
            return Reply(400, b"invalid_blocks")
        with self._lock:
            self.posted.append(
                Posted(
                    f"webhook:{path.split('/')[1]}",
                    str(body.get("text") or ""),
                    list(body.get("blocks") or []),
                    team,
                )
            )
        return Reply(200, b"ok")

    # -- what Slack sends us ----------------------------------------------------------------

    def interaction(
        self,
        *,
        team_id: str,
        user_id: str,
        action_id: str,
        value: str,
        at: float | None = None,
        secret: str | None = None,
    ) -> tuple[bytes, Mapping[str, str]]:
        """A ``block_actions`` request as Slack posts it when ``user_id`` clicks a button:
        the form body (``payload=<json>``) and its signed headers."""
        payload = {
            "type": "block_actions",
            "team": {"id": team_id, "domain": team_id.lower()},
            "user": {"id": user_id, "team_id": team_id},
            "api_app_id": "A0COLONY",
            "trigger_id": random.token_hex(8),
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": "decide",
                    "value": value,
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }
        body = urlencode({"payload": json.dumps(payload)}).encode()
        stamp = str(int(time.time() if at is None else at))
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature(secret or self.signing_secret, stamp, body),
        }
        return body, headers
