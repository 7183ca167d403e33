"""The Gmail and Graph APIs this deployment can send through and connect (issue 39 item 2):
one per mailbox kind whose OAuth app the settings configure; a kind left out is answered
where it is needed ("no OAuth app is configured for graph mailboxes")."""

from __future__ import annotations

from colony.adapters.gmail import gmail_from_settings
from colony.adapters.graph_mail import graph_from_settings
from colony.ports import MailboxApi, MailboxApis
from colony.settings import Settings


def mailbox_apis_from_settings(settings: Settings) -> MailboxApis:
    apps = settings.mailbox_apps
    apis: dict[str, MailboxApi] = {}
    if apps.google_client_id and apps.google_client_secret:
        apis["gmail"] = gmail_from_settings(settings)
    if apps.microsoft_client_id and apps.microsoft_client_secret:
        apis["graph"] = graph_from_settings(settings)
    return apis
