"""The ``MailboxApi`` port's conformance suite (issue 39 item 2), against the memory fake and
both real adapters over HTTP on their local stand-ins: ``GmailApi`` (httpx) against
``colony.testing.gmail_server`` and ``GraphMailApi`` against ``colony.testing.graph_server``
(stood in: Google and Microsoft; real: the adapters, their HTTP, the wire formats).

The contract (``colony.ports.mailboxes``): a consent's code becomes a grant with a refresh
token; the grant names its mailbox; a message sent from it arrives as written (our
Message-ID, threading headers, body) and a follow-up sent into the first's thread joins it;
a refreshed token works; a lapsed access token and a revoked grant are ``GrantRefused``; a
busy provider is ``ProviderUnavailable`` with its wait; a message the provider refuses is
``MailRejected``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from colony.adapters.gmail import GmailApi
from colony.adapters.graph_mail import GraphMailApi
from colony.errors import GrantRefused, ProviderUnavailable
from colony.ports import Mail, MailboxApi, MailRejected
from colony.testing.gmail_server import GmailServer
from colony.testing.graph_server import GraphServer
from colony.testing.mail_accounts import CLIENT_ID, CLIENT_SECRET, redirect_code
from colony.testing.mailbox_memory import MemoryMailboxApi

MAILBOX, OTHER = "ada@mail.acme.example", "bob@mail.acme.example"
REDIRECT = "https://colony.example/mailboxes/callback"


@dataclass
class Harness:
    kind: str
    api: MailboxApi
    consent: Callable[[str], tuple[str, str]]  # authorize URL -> (code, state)
    revoke_mailbox: Callable[[str], None]
    expire: Callable[[], None]
    busy: Callable[[float], None]
    sent: Callable[[], list[dict[str, Any]]]  # what arrived: headers and body, normalised


def _follow(url: str) -> tuple[str, str]:
    answer = httpx.get(url, follow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    return redirect_code(answer.headers["location"])


def _seen(message: Any, thread: str | None) -> dict[str, Any]:
    return {
        "from": str(message["From"]),
        "message_id": str(message["Message-ID"]),
        "in_reply_to": message.get("In-Reply-To") and str(message["In-Reply-To"]),
        "references": message.get("References") and str(message["References"]),
        "body": message.get_content().replace("\r\n", "\n"),
        "thread": thread,
    }


def _thread(server: GmailServer | GraphServer, delivered: Any) -> str | None:
    """Gmail's thread id; for Graph, the conversation Exchange files the message under."""
    if isinstance(server, GraphServer):
        return server.conversation(delivered)
    return delivered.thread


@pytest.fixture(params=["memory", "gmail", "graph"])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    if request.param == "memory":
        fake = MemoryMailboxApi("gmail")
        fake.host(MAILBOX, OTHER)

        def seen_memory() -> list[dict[str, Any]]:
            return [
                {
                    "from": s.mail.sender,
                    "message_id": s.mail.message_id,
                    "in_reply_to": s.mail.headers.get("In-Reply-To"),
                    "references": s.mail.headers.get("References"),
                    "body": s.mail.text,
                    "thread": s.thread,
                }
                for s in fake.sent
            ]

        yield Harness(
            "memory",
            fake,
            fake.consent,
            fake.revoke_mailbox,
            fake.expire,
            lambda wait: fake.busy(1, wait),
            seen_memory,
        )
        return
    server = GmailServer() if request.param == "gmail" else GraphServer()
    with server:
        server.accounts.host(MAILBOX, OTHER)
        api: GmailApi | GraphMailApi
        if request.param == "gmail":
            api = GmailApi(
                CLIENT_ID,
                CLIENT_SECRET,
                api_url=server.base_url,
                oauth_url=server.base_url,
                authorize_url=f"{server.base_url}/o/oauth2/v2/auth",
                userinfo_url=f"{server.base_url}/v1/userinfo",
            )
        else:
            api = GraphMailApi(
                CLIENT_ID, CLIENT_SECRET, api_url=server.base_url, login_url=server.base_url
            )
        try:
            yield Harness(
                request.param,
                api,
                _follow,
                server.accounts.revoke,
                server.accounts.expire_access,
                lambda wait: server.rate_limit(1, int(wait)),
                lambda: [_seen(d.message, _thread(server, d)) for d in server.accounts.delivered],
            )
        finally:
            api.close()


def _grant(h: Harness, mailbox: str = MAILBOX) -> Any:
    code, state = h.consent(h.api.authorize_url("st4te", REDIRECT, mailbox))
    assert state == "st4te"
    return h.api.exchange_code(code, REDIRECT)


def _mail(n: int = 1, **headers: str) -> Mail:
    return Mail(
        message_id=f"<ob-{n}@mail.acme.example>",
        sender=f"Ada Lovelace <{MAILBOX}>",
        to="dana@granitepeak.example",
        subject="Lease costs",
        text=f"Hi Dana,\nstep {n} — café ✓\n",
        headers=headers,
    )


def test_a_consent_becomes_a_grant_for_its_mailbox(harness: Harness) -> None:
    tokens = _grant(harness)
    assert tokens.refresh_token and tokens.expires_in > 0
    assert harness.api.address(tokens.access_token) == MAILBOX
    with pytest.raises(GrantRefused):  # a code works once
        harness.api.exchange_code("not-a-code", REDIRECT)


def test_a_message_arrives_as_written_and_a_follow_up_joins_its_thread(
    harness: Harness,
) -> None:
    token = _grant(harness).access_token
    first = harness.api.send(token, _mail(1))
    refs = {"In-Reply-To": "<ob-1@mail.acme.example>", "References": "<ob-1@mail.acme.example>"}
    second = harness.api.send(token, _mail(2, **refs), first.thread)
    seen = harness.sent()
    assert [s["message_id"] for s in seen] == [
        "<ob-1@mail.acme.example>",
        "<ob-2@mail.acme.example>",
    ]
    assert seen[0]["from"] == f"Ada Lovelace <{MAILBOX}>" and "café ✓" in seen[0]["body"]
    assert seen[1]["in_reply_to"] == "<ob-1@mail.acme.example>"
    assert seen[1]["references"] == "<ob-1@mail.acme.example>"
    # Gmail threads by id; Graph (Exchange) by the headers, with no id to pass
    assert second.thread == first.thread
    assert seen[0]["thread"] == seen[1]["thread"]


def test_a_lapsed_access_token_is_refused_and_a_refresh_mends_it(harness: Harness) -> None:
    tokens = _grant(harness)
    harness.expire()
    with pytest.raises(GrantRefused):
        harness.api.send(tokens.access_token, _mail())
    fresh = harness.api.refresh(tokens.refresh_token)
    harness.api.send(fresh.access_token, _mail())
    assert len(harness.sent()) == 1


def test_a_revoked_grant_is_refused_at_refresh(harness: Harness) -> None:
    tokens = _grant(harness)
    harness.revoke_mailbox(MAILBOX)
    with pytest.raises(GrantRefused) as refused:
        harness.api.refresh(tokens.refresh_token)
    assert refused.value.reason == "invalid_grant"
    harness.api.revoke(tokens.refresh_token)  # giving back what is gone is done, not an error


def test_a_busy_provider_says_when_to_come_back(harness: Harness) -> None:
    token = _grant(harness).access_token
    harness.busy(7)
    with pytest.raises(ProviderUnavailable) as busy:
        harness.api.send(token, _mail())
    assert busy.value.retry_after == 7
    harness.api.send(token, _mail())  # and then it goes
    assert len(harness.sent()) == 1


def test_a_message_not_from_the_granted_mailbox_is_refused_for_good(harness: Harness) -> None:
    token = _grant(harness, OTHER).access_token
    with pytest.raises(MailRejected):
        harness.api.send(token, _mail())
    assert harness.sent() == []
