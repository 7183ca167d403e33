"""The send function's parts: the sender the settings choose (``COLONY_MAIL_PROVIDER``: the
SMTP relay, ``colony.adapters.smtp``, or Resend, ``colony.adapters.resend_mail``), and the
secret store its orgs' DKIM keys and mailbox grants are read from (cached: one read per key
per few minutes, not per message), and the Gmail and Graph APIs an org's own mailboxes send
through (issue 39 item 2), each built on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.runtime.deps import Parts

if TYPE_CHECKING:
    from colony.ports import MailboxApis, SecretStore, Sender
    from colony.settings import Settings


def sender(settings: Settings) -> Sender:
    if settings.mail_provider == "resend":
        # lazy: the provider's SDK loads with the first send, not at cold start
        from colony.adapters.resend_mail import resend_from_settings

        return resend_from_settings(settings)
    # lazy: smtplib loads with the first send
    from colony.adapters.smtp import sender_from_settings

    return sender_from_settings(settings)


def secrets(settings: Settings) -> SecretStore:
    # lazy: Secret Manager's REST client loads with the first signed send
    from colony.runtime.org_secrets import cached_store

    return cached_store(settings)


def mailbox_apis(settings: Settings) -> MailboxApis:
    # lazy: httpx loads with the first message from an org's own Gmail / Microsoft 365 mailbox
    from colony.runtime.mailbox_apis import mailbox_apis_from_settings

    return mailbox_apis_from_settings(settings)


def parts() -> Parts:
    return Parts(sender=sender, secrets=secrets, mailbox_apis=mailbox_apis)
