"""The OAuth apps an org connects its own mailboxes through (issue 39 item 2), read with the
rest of the settings (``Settings.mailbox_apps``): Google's (Gmail API) and Microsoft's
(Graph), the page each provider sends the person back to, and where the APIs are (a local
stand-in in tests and ``make run``; None: the providers' own addresses).

An app left unset is an answer, not an error: mailboxes of that kind cannot be connected,
and connecting one says which variables to set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

GMAIL_API_URL = "https://gmail.googleapis.com"
GOOGLE_OAUTH_URL = "https://oauth2.googleapis.com"  # /token, /revoke
GOOGLE_AUTHORIZE_URL = "https://accounts.google.com/o/oauth2/v2/auth"
GOOGLE_USERINFO_URL = "https://openidconnect.googleapis.com/v1/userinfo"
GRAPH_API_URL = "https://graph.microsoft.com"
MICROSOFT_LOGIN_URL = "https://login.microsoftonline.com"  # /{tenant}/oauth2/v2.0/...


@dataclass(frozen=True, slots=True)
class MailboxApps:
    google_client_id: str | None = None
    google_client_secret: str | None = field(default=None, repr=False)
    microsoft_client_id: str | None = None
    microsoft_client_secret: str | None = field(default=None, repr=False)
    microsoft_tenant: str = "organizations"  # work and school accounts only
    redirect_uri: str | None = None  # our page the provider sends the person back to
    gmail_api_url: str = GMAIL_API_URL
    google_oauth_url: str = GOOGLE_OAUTH_URL
    google_authorize_url: str = GOOGLE_AUTHORIZE_URL
    google_userinfo_url: str = GOOGLE_USERINFO_URL
    graph_api_url: str = GRAPH_API_URL
    microsoft_login_url: str = MICROSOFT_LOGIN_URL

    @classmethod
    def from_env(cls, get: Callable[[str], str | None]) -> MailboxApps:
        """From ``COLONY_GOOGLE_MAIL_CLIENT_ID`` / ``_SECRET``,
        ``COLONY_MICROSOFT_MAIL_CLIENT_ID`` / ``_SECRET`` / ``COLONY_MICROSOFT_MAIL_TENANT``,
        ``COLONY_MAILBOX_REDIRECT_URI`` and the stand-ins' ``COLONY_GMAIL_API_URL``,
        ``COLONY_GOOGLE_OAUTH_URL`` (a stand-in's authorize page at ``/o/oauth2/v2/auth``
        and userinfo at ``/v1/userinfo``),
        ``COLONY_GRAPH_API_URL``, ``COLONY_MICROSOFT_LOGIN_URL``."""
        google_oauth = get("COLONY_GOOGLE_OAUTH_URL")
        return cls(
            google_client_id=get("COLONY_GOOGLE_MAIL_CLIENT_ID"),
            google_client_secret=get("COLONY_GOOGLE_MAIL_CLIENT_SECRET"),
            microsoft_client_id=get("COLONY_MICROSOFT_MAIL_CLIENT_ID"),
            microsoft_client_secret=get("COLONY_MICROSOFT_MAIL_CLIENT_SECRET"),
            microsoft_tenant=get("COLONY_MICROSOFT_MAIL_TENANT") or "organizations",
            redirect_uri=get("COLONY_MAILBOX_REDIRECT_URI"),
            gmail_api_url=get("COLONY_GMAIL_API_URL") or GMAIL_API_URL,
            google_oauth_url=google_oauth or GOOGLE_OAUTH_URL,
            google_authorize_url=(
                f"{google_oauth.rstrip('/')}/o/oauth2/v2/auth"
                if google_oauth
                else GOOGLE_AUTHORIZE_URL
            ),
            google_userinfo_url=(
                f"{google_oauth.rstrip('/')}/v1/userinfo" if google_oauth else GOOGLE_USERINFO_URL
            ),
            graph_api_url=get("COLONY_GRAPH_API_URL") or GRAPH_API_URL,
            microsoft_login_url=get("COLONY_MICROSOFT_LOGIN_URL") or MICROSOFT_LOGIN_URL,
        )
