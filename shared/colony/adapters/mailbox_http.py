"""What the Gmail and Graph adapters share (``colony.ports.MailboxApi``): one httpx client,
the OAuth token grants (form posts, answered as RFC 6749 §5 says), and the sorting of an
answer into the port's errors.

    an answer
     ├─ 2xx                                         ─► its JSON ({} when empty)
     ├─ token endpoint: invalid_grant               ─► GrantRefused   (revoked, expired)
     ├─ token endpoint: invalid_client, unauthorized_client, redirect_uri_mismatch
     │                                              ─► ConfigError    (our app's settings)
     ├─ 401, or a refusal the provider names as the grant's (``grant_codes``)
     │                                              ─► GrantRefused
     ├─ 429, a rate limit the provider names (``busy_codes``), 5xx, no connection
     │                                              ─► ProviderUnavailable (Retry-After kept)
     └─ any other 4xx                               ─► MailRejected   (this message, for good)

Over httpx rather than the providers' SDKs: four calls each (``google-api-python-client``
is 60 MB with its discovery documents, ``msgraph-sdk`` 40 MB), and the send function's bundle
holds whatever it imports. Tokens are never logged nor put in an error; a provider's reason
is its error code, at most 60 characters.
"""

from __future__ import annotations

from typing import Any

import httpx

from colony.adapters.retry_after import retry_after_seconds
from colony.errors import ConfigError, GrantRefused, ProviderError, ProviderUnavailable
from colony.ports import MailboxTokens, MailRejected

_OURS = frozenset({"invalid_client", "unauthorized_client", "redirect_uri_mismatch"})


class MailboxHttp:
    """One provider's HTTP client; ``provider`` names it in errors."""

    provider = "the mail provider"
    grant_codes: frozenset[str] = frozenset()
    busy_codes: frozenset[str] = frozenset()

    def __init__(self, *, timeout: float = 20.0, transport: Any = None) -> None:
        self._http = httpx.Client(timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, url, **kwargs)
        except httpx.TransportError as error:
            raise ProviderUnavailable(
                f"{self.provider} could not be reached ({type(error).__name__})"
            ) from None

    def grant(self, url: str, form: dict[str, str], what: str) -> MailboxTokens:
        """A token grant (``authorization_code`` or ``refresh_token``)."""
        answer = self.request("POST", url, data=form)
        if answer.status_code >= 400 and answer.status_code < 500:
            code = str(_body(answer).get("error") or "")[:60]
            if code in _OURS:
                raise ConfigError(
                    f"{self.provider} refused our OAuth app's {what} ({code}): check its client"
                    " id, secret and COLONY_MAILBOX_REDIRECT_URI"
                )
            raise GrantRefused(f"{self.provider} refused the {what} ({code})", reason=code)
        body = self.answer(answer, what)
        try:
            refresh = body.get("refresh_token")
            return MailboxTokens(
                str(body["access_token"]),
                int(body["expires_in"]),
                str(refresh) if refresh else None,
            )
        except (KeyError, TypeError, ValueError):
            raise ProviderError(f"{self.provider}'s token answer lacks a token") from None

    def answer(self, answer: httpx.Response, what: str) -> dict[str, Any]:
        """The JSON of a 2xx answer, else the port's error for it."""
        body = _body(answer)
        status = answer.status_code
        if 200 <= status < 300:
            return body
        code = self.code(body)[:60]
        if status == 429 or status >= 500 or code in self.busy_codes:
            raise ProviderUnavailable(
                f"{self.provider}'s {what} answered {status} {code}".rstrip(),
                retry_after=retry_after_seconds(answer.headers),
                reason=code or None,
            )
        if status == 401 or code in self.grant_codes:
            raise GrantRefused(f"{self.provider} refused the grant ({status} {code})", reason=code)
        raise MailRejected(f"{self.provider} refused the {what} for good ({status} {code})")

    def code(self, body: dict[str, Any]) -> str:
        """The provider's own name for an error in its error body."""
        error = body.get("error")
        if isinstance(error, dict):
            return str(error.get("code") or error.get("status") or "")
        return str(error or "")


def _body(answer: httpx.Response) -> dict[str, Any]:
    try:
        body = answer.json() if answer.content else {}
    except ValueError:
        body = {}
    return body if isinstance(body, dict) else {}
