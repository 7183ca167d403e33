"""The send function's parts: the sender the settings choose (``COLONY_MAIL_PROVIDER``: the
SMTP relay, ``colony.adapters.smtp``, or Resend, ``colony.adapters.resend_mail``), and the
secret store its orgs' DKIM keys are read from (cached: one read per key per few minutes, not
per message), each built on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.runtime.deps import Parts

if TYPE_CHECKING:
    from colony.ports import SecretStore, Sender
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


def parts() -> Parts:
    return Parts(sender=sender, secrets=secrets)
