"""An org's own mailbox at a mail provider (issue 39 item 2): Google Workspace through the
Gmail API, Microsoft 365 through Graph. One port for both (``MailboxApi``): the OAuth grant
(authorize, code, refresh, revoke), whose mailbox a token is, and sending one message as
RFC 822 bytes from it.

Conventions every adapter keeps (``tests/conformance/test_mailbox_api.py`` holds the memory
fake and both adapters to them):

- ``send`` takes the ``Mail`` (sent as RFC 822 bytes, so our Message-ID, ``In-Reply-To``
  and ``References`` go as written; never DKIM-signed by us: the provider signs with the
  key the org set up there), and ``thread``: the provider's thread of the contact's first message
  (Gmail's ``threadId``; None for Graph, which threads by those headers). It returns the
  provider's id of the sent message and its thread.
- A grant the provider refuses (a revoked or expired refresh token, an access token it no
  longer takes) is ``GrantRefused``: retrying cannot help until a person connects again.
- 429 and 5xx are ``ProviderUnavailable`` with the provider's ``Retry-After``; a message the
  provider refuses for good (400: malformed, a recipient it will not take) is
  ``MailRejected``.
- Tokens are never logged nor put in an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from colony.ports.mail import Mail

MailboxKind = Literal["gmail", "graph"]


@dataclass(frozen=True, slots=True)
class MailboxTokens:
    """A grant's tokens: the access token and how long it lives, and the refresh token
    (None when the provider kept the one we have: Google does not send it on a refresh)."""

    access_token: str = field(repr=False)
    expires_in: int
    refresh_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class SentRef:
    """What the provider calls the message it sent, and its thread."""

    message_id: str
    thread: str | None = None


@runtime_checkable
class MailboxApi(Protocol):
    """One provider's mailbox API for one OAuth app."""

    @property
    def kind(self) -> MailboxKind:
        """Which mailboxes it serves (``sender_mailboxes.kind``)."""
        ...

    def authorize_url(self, state: str, redirect_uri: str, login_hint: str) -> str:
        """Where to send the person to grant the app their mailbox (``login_hint``: the
        mailbox's address, so they sign in as it)."""
        ...

    def exchange_code(self, code: str, redirect_uri: str) -> MailboxTokens: ...

    def refresh(self, refresh_token: str) -> MailboxTokens: ...

    def address(self, access_token: str) -> str:
        """The address of the mailbox the token is for (lower-cased)."""
        ...

    def send(self, access_token: str, mail: Mail, thread: str | None = None) -> SentRef: ...

    def revoke(self, refresh_token: str) -> None:
        """Give the grant back (already unknown: done)."""
        ...


# The APIs a function can send through, by kind (a deployment without an app for one kind
# leaves it out: its mailboxes cannot be connected, and say so).
MailboxApis = Mapping[str, MailboxApi]
